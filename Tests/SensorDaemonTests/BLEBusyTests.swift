import BLEBridge
import Foundation
import Glibc
import SensorKitModel
import SensorSystem
import Synchronization
import Testing

@testable import BLEBridge
@testable import SensorDaemon

/// A radio shared with bluetoothd: a scan refused as busy and a connect refused with EBUSY are
/// explained in the log, once each, and retried (docs/ble.md, "States of a wearable"). The
/// transport here is a scripted one: neither condition can be produced by the emulated transport.
@Suite struct BLEBusyTests {
    final class BusyTransport: BLETransport, @unchecked Sendable {
        let scans = Mutex(0)
        let connects = Mutex(0)

        func scan() throws(BLETransportError) -> [BLEScanReport] {
            let count = scans.withLock {
                $0 += 1; return $0
            }
            if count <= 2 { throw .busy("LE Set Scan Parameters: Input/output error") }
            return [BLEScanReport(address: "C0:FF:EE:00:00:01", data: AdvertisingData(parsing: [0x04, 0x09, 0x48, 0x52, 0x31]))]
        }

        func connect(
            _ report: BLEScanReport, queue: DispatchQueue, onEvent: @escaping @Sendable (GATTLinkEvent) -> Void
        ) throws(BLETransportError) -> any GATTLink {
            connects.withLock { $0 += 1 }
            throw .busy(SystemError("connect(C0:FF:EE:00:00:01)", errno: EBUSY).description)
        }
    }

    struct Sources: SourceRegistry {
        func add(_ source: any SensorSource) {}
        func remove(source: String) {}
    }

    @Test func busyScansAndConnectsAreExplainedOnceAndRetried() {
        let transport = BusyTransport()
        let (journal, lines) = Journal.memory()
        let central = BLECentral(
            transport: transport, wearables: [WearableConfiguration(name: "strap", match: .name("HR*"), streams: [.heartRate])],
            registry: Sources(), clock: LinuxSystemClock(), journal: journal,
            durations: FetchPolicy.describe)
        central.start()
        let deadline = Date().addingTimeInterval(10)
        while transport.connects.withLock({ $0 }) < 3 && Date() < deadline { usleep(50_000) }
        central.stop()
        #expect(transport.connects.withLock { $0 } >= 3, "\(lines())")
        let log = lines()
        #expect(log.filter { $0.contains("another Bluetooth stack holds the adapter") }.count == 1, "\(log)")
        #expect(
            log.filter { $0.contains("usually bluetoothd") && $0.contains("bluetoothctl remove C0:FF:EE:00:00:01") }.count == 1,
            "\(log)")
        #expect(log.contains { $0.contains("scanning works again") }, "\(log)")
    }

    /// Heart rate is stamped when its PDU is read: a queue held up makes stamps late, and the log
    /// says so instead of staying silent (docs/ble.md, "Known limits").
    @Test func aHeldUpQueueIsLoggedOnce() {
        let (journal, lines) = Journal.memory()
        let central = BLECentral(
            transport: BusyTransport(), wearables: [], registry: Sources(), clock: LinuxSystemClock(), journal: journal,
            durations: FetchPolicy.describe)
        central.start()
        usleep(400_000)
        central.queue.sync { _ = usleep(800_000) }  // another link's work holding the queue
        central.queue.sync { _ = usleep(800_000) }
        usleep(400_000)
        central.stop()
        let held = lines().filter { $0.contains("the driver's queue was held up") }
        #expect(held.count == 1, "\(lines())")
    }
}
