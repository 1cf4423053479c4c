import BLEBridge
import Foundation
import SensorKitModel
import Testing

@testable import SensorDaemon

/// The steps docs/architecture.md lists for a new family and a new driver that the compiler
/// cannot check: a sensor with a Linux source has a family, a driver and its row in
/// docs/sensorkit-mapping.md, and every section of the configuration file is documented.
@Suite struct DriverTableTests {
    static let top = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// Every driver of the table switched on.
    static func everyDriverOn() throws -> DaemonConfiguration {
        let streams = WearableConfiguration.streamSensors.map(\.rawValue).joined(separator: ", ")
        return try DaemonConfiguration.parse(
            "[iio]\nremote = ip:rig.local\n[ble]\n[wearable any]\nname = *\nstreams = \(streams)\n[modem]\n")
    }

    @Test func everyDriverOfTheTableRunsUnderSomeConfiguration() throws {
        let names = DriverTable(configuration: try Self.everyDriverOn()).drivers.map(\.entry.name)
        #expect(names == ["iio", "iio-remote", "ble", "keyboard", "device-usage", "modem", "visits"])
        #expect(
            DriverTable(configuration: DaemonConfiguration()).drivers.map(\.entry.name)
                == ["iio", "keyboard", "device-usage", "visits"])
    }

    @Test(arguments: SensorCatalog.all.filter(\.isSupportedOnLinux))
    func aSensorWithALinuxSourceHasAFamilyAndADriver(descriptor: SensorDescriptor) throws {
        #expect(SensorFamilies.layout(of: descriptor.sensor) != nil, "\(descriptor.name) has no family")
        let registry = DriverTable(configuration: try Self.everyDriverOn()).registry
        let drivers = registry.drivers.filter { $0.sensors.contains(descriptor.sensor) }
        #expect(!drivers.isEmpty, "no driver of the table records \(descriptor.name)")
        // A wearable's accelerometer is recorded beside the host's own (IIO).
        #expect(
            drivers.allSatisfy {
                $0.source == descriptor.source
                    || ($0.source == .bluetoothLE && WearableConfiguration.streamSensors.contains(descriptor.sensor))
            }, "\(descriptor.name)")
        // And its row in the mapping table, with its sample class.
        let mapping = try String(contentsOfFile: Self.top + "/docs/sensorkit-mapping.md", encoding: .utf8)
        let row = mapping.split(separator: "\n").first { $0.hasPrefix("| `\(descriptor.name)` |") }
        #expect(row?.contains("`\(descriptor.sampleClass)`") == true, "docs/sensorkit-mapping.md row of \(descriptor.name)")
    }

    @Test func everySectionOfTheFileIsDocumented() throws {
        let documented = try String(contentsOfFile: Self.top + "/docs/configuration.md", encoding: .utf8)
        let kinds = DaemonConfiguration.readers.flatMap { $0.sections.map(\.kind) }.filter { !$0.isEmpty }
        #expect(
            Set(kinds) == [
                "store", "reader", "sensor", "grant", "iio", "ble", "wearable", "keyboard", "device-usage", "modem",
                "visits",
            ])
        for kind in kinds {
            #expect(
                documented.contains("\n[\(kind)]") || documented.contains("\n[\(kind) "),
                "[\(kind)] is not in docs/configuration.md")
        }
    }

    /// A driver's settings compare by value (a reload decides from them whether to restart), and
    /// defaults read back as the defaults.
    @Test func driverSettingsCompareByValue() throws {
        #expect(try DaemonConfiguration.parse("[iio]\nenabled = yes\n") == DaemonConfiguration())
        #expect(try DaemonConfiguration.parse("[iio]\nenabled = no\n") != DaemonConfiguration())
        #expect(try DaemonConfiguration.parse("[ble]\n") != DaemonConfiguration())
        // No transport line: bluez wherever bluetoothd is, else hci; not the same as either.
        #expect(try DaemonConfiguration.parse("[ble]\n") != DaemonConfiguration.parse("[ble]\ntransport = hci\n"))
        #expect(
            try DaemonConfiguration.parse("[ble]\ntransport = bluez\n") == DaemonConfiguration.parse("[ble]\ntransport = bluez\n")
        )
        #expect(
            try DaemonConfiguration.parse("[iio]\nignore = a\n[ble]\n")
                == DaemonConfiguration.parse("[ble]\n[iio]\nignore = a\n"))
        #expect(
            try DaemonConfiguration.parse("[iio]\nignore = a\n[ble]\n")
                != DaemonConfiguration.parse("[ble]\n[iio]\nignore = b\n"))
    }

    /// `[modem]`: the driver runs only with the section, the interval within 1 s to 1 d, `enabled = no`
    /// names the key that turned it off.
    @Test func theModemSectionReadsItsIntervalAndCanBeTurnedOff() throws {
        let modem = try DaemonConfiguration.parse("[modem]\ninterval = 2s\n").drivers[ModemDriverSettings.self]
        #expect(modem.interval == 2_000_000_000 && modem.enabled)
        #expect(throws: DaemonConfiguration.ParseError.self) { try DaemonConfiguration.parse("[modem]\ninterval = 2d\n") }
        #expect(throws: DaemonConfiguration.ParseError.self) { try DaemonConfiguration.parse("[modem]\nnumber = 1\n") }
        #expect(try DaemonConfiguration.parse("[modem]\n") != DaemonConfiguration())
        let off = DriverTable(configuration: try DaemonConfiguration.parse("[modem]\nenabled = no\n"))
        #expect(off.registry.drivers.first { $0.name == "modem" }?.disabledBy == "[modem] enabled = no")
    }

    /// `[device-usage] interval`: SensorKit's 15 minutes unless set, within 1 s to 1 d.
    @Test func theDeviceUsageSectionReadsItsBoundedInterval() throws {
        #expect(DaemonConfiguration().drivers[DeviceUsageDriverSettings.self].interval == 900_000_000_000)
        let usage = try DaemonConfiguration.parse("[device-usage]\ninterval = 6s\n").drivers[DeviceUsageDriverSettings.self]
        #expect(usage.interval == 6_000_000_000 && usage.enabled)
        for bad in ["2d", "500ms", "0s", "-5s", "many"] {
            #expect(throws: DaemonConfiguration.ParseError.self) {
                try DaemonConfiguration.parse("[device-usage]\ninterval = \(bad)\n")
            }
        }
    }
}
