import BLEBridge
import SensorKitModel
import SensorSystem

/// The one place BLE transports are made from `[ble] transport =`.
public enum BLETransports {
    /// `log` takes what a transport has to say beside its links (bluez: what it left out of
    /// bluetoothd's objects, the wearables it paired, bluetoothd away or back, the bus reopened)
    /// and, without `transport =`, which transport was chosen and why — once.
    public static func make(_ transport: BLESettings.Transport, log: @escaping @Sendable (String) -> Void = { _ in })
        throws(BLETransportError) -> any BLETransport
    {
        switch transport {
        case .hci(let adapter): return try HCITransport.open(adapter: adapter)
        case .hciSocket(let path): return try HCITransport.open(controllerSocket: path)
        case .emulated(let directory): return EmulatedBLETransport(directory: directory)
        case .automatic(let adapter):
            let choice = BLETransportChoice.settle(adapter: adapter, look: { .look(adapter: adapter) })
            log("ble: no [ble] transport set: \(choice.reason ?? "")")
            guard case .bluez = choice else { return try HCITransport.open(adapter: adapter) }
            return try make(.bluez(adapter: adapter), log: log)
        case .bluez(let adapter):
            var options = BlueZTransport.Options()
            options.adapter = adapter
            return try BlueZTransport(options: options, log: log)
        }
    }
}

/// Wearables named in `[wearable]` sections, reached over `[ble] transport =` (docs/ble.md,
/// "The daemon's BLE driver"): one `WearableLink` per wearable, one source per (wearable, stream).
struct BLEDriver: SensorDriver {
    let settings: BLESettings
    let wearables: [WearableConfiguration]

    var entry: DriverRegistry.Driver {
        .init(name: "ble", source: .bluetoothLE, sensors: Set(wearables.flatMap(\.streams)))
    }

    func start(registry: any SourceRegistry, journal: Journal) throws -> any SourceDiscovery {
        let transport = try BLETransports.make(settings.transport) { line in journal.notice("\(line)") }
        journal.info("ble: \(wearables.count) wearable(s) over \(settings.transport)")
        let central = BLECentral(
            transport: transport, wearables: wearables, registry: registry,
            clock: LinuxSystemClock(), journal: journal, durations: FetchPolicy.describe)
        central.start()
        return central
    }
}

extension BLECentral: SourceDiscovery {}
