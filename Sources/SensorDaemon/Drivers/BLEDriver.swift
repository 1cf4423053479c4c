import BLEBridge
import SensorKitModel
import SensorSystem

/// The one place BLE transports are made from `[ble] transport =`.
public enum BLETransports {
    public static func make(_ transport: BLESettings.Transport) throws(BLETransportError) -> any BLETransport {
        switch transport {
        case .hci(let adapter): return try HCITransport.open(adapter: adapter)
        case .emulated(let directory): return EmulatedBLETransport(directory: directory)
        case .automatic(let adapter):
            guard BluetoothdPresence.probe(adapter: adapter) == .managesAdapter else {
                return try HCITransport.open(adapter: adapter)
            }
            return try make(.bluez(adapter: adapter))
        case .bluez:
            // BlueZTransport speaks the GATT-level link (GATTLink); it becomes a BLETransport when
            // `connect` returns that link on every transport (issue 12/17), and is made here then.
            throw .unavailable("the bluez transport is not connected to the BLE driver in this build")
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
        let transport = try BLETransports.make(settings.transport)
        journal.info("ble: \(wearables.count) wearable(s) over \(settings.transport)")
        let central = BLECentral(
            transport: transport, wearables: wearables, registry: registry,
            clock: LinuxSystemClock(), journal: journal)
        central.start()
        return central
    }
}
