import IIOBridge
import SensorKitModel
import SensorSystem

/// IIO chips of this machine, found with udev (monitor before enumerate; add, remove, change)
/// and captured from their character devices (docs/iio.md).
struct LocalIIODriver: ConfiguredDriver {
    let configuration: DaemonConfiguration

    init(configuration: DaemonConfiguration) { self.configuration = configuration }

    var entry: DriverRegistry.Driver {
        .init(
            name: "iio", source: .iio, sensors: Set(IIOSensorFunction.Kind.allCases.map(\.sensor)),
            disabledBy: configuration.iioEnabled ? nil : "[iio] enabled = no")
    }

    func start(registry: any SourceRegistry, journal: Journal) throws -> any SourceDiscovery {
        var options = IIODiscovery.Options(
            ignored: configuration.ignoredDevices, clock: LinuxSystemClock(), log: journal, rates: configuration.sensorRates)
        options.deliveryHold = Self.deliveryHold(configuration)
        // Without udev (a container without /run/udev) this throws: nothing local from IIO.
        return try IIODiscovery.start(registry: registry, options: options)
    }

    /// The lab profile hands each read over at once, so a live subscriber gets a sample within
    /// milliseconds of the chip's watermark; the study profile keeps the battery-friendly
    /// hand-over of whole batches (docs/live.md, docs/iio.md §4).
    static func deliveryHold(_ configuration: DaemonConfiguration) -> Int64 {
        configuration.profile == .lab ? 0 : IIODeviceCapture.defaultDeliveryHold
    }
}

extension IIODiscovery: SourceDiscovery {}

/// `[iio]`: what both IIO drivers read (`RemoteIIODriver` reads its `remote =`).
struct IIOSettings: DriverConfiguration {
    /// `enabled = no` turns the IIO drivers off: their sensors then refuse `startRecording`.
    var enabled = true
    /// `ignore =`: IIO devices to leave alone (by name or sysfs device folder).
    var ignored: [String] = []
    /// `remote =`: lab rigs' libiio contexts served by `iiod` (`ip:host[:port]`).
    var remote: [String] = []
}

extension LocalIIODriver {
    static var sections: [ConfigurationSectionRule] { [.single("iio")] }

    static func read(
        _ entry: ConfigurationFile.Entry, in section: ConfigurationFile.Section, into config: inout DaemonConfiguration
    ) throws(DaemonConfiguration.ParseError) -> Bool {
        switch entry.key {
        case "enabled": config.drivers[IIOSettings.self].enabled = try entry.yesOrNo()
        case "ignore": config.drivers[IIOSettings.self].ignored += entry.list
        default: return false
        }
        return true
    }
}

extension DaemonConfiguration {
    /// `[iio] enabled`.
    public var iioEnabled: Bool {
        get { drivers[IIOSettings.self].enabled }
        set { drivers[IIOSettings.self].enabled = newValue }
    }

    /// `[iio] ignore`.
    public var ignoredDevices: [String] {
        get { drivers[IIOSettings.self].ignored }
        set { drivers[IIOSettings.self].ignored = newValue }
    }
}
