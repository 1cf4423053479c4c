import BLEBridge
import Dispatch
import Foundation
import Glibc
import SensorSimulation
import SensorSystem
import Synchronization
import SystemBus

/// `sensorkit-bench ble-bluez`: the CPU this process spends receiving one H10 (130 Hz ECG in
/// 73-sample frames, 50 Hz accelerometer in 25-sample delta-compressed frames, 1 Hz heart rate)
/// through bluetoothd (`BlueZTransport`: an `AcquireNotify` fd, one datagram per notification)
/// beside the emulated transport (`GATTConnection` on the peripheral's ATT socket), and the D-Bus
/// messages on the bus per notification while it streams (a monitor connection counts every
/// message; 0 expected: notifications come through the fds). The wearable is `sensorkit-wearable` in a process of its own, in real
/// time; bluetoothd is the tests' stand-in (`Tests/Fixtures/bluez/bluetoothd_standin.py`) on a
/// private bus, also a process of its own: neither is counted, as neither runs in the daemon.
/// Each path is measured for `seconds` of streaming and scaled to an hour. Everything above the
/// link (timelines, pipeline, store) is the same on both transports and is left out.
enum BLEBlueZPathBenchmark {
    static let seconds = 30.0
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Tests/Fixtures/bluez/bluetoothd_standin.py").path
    static let address = "C0:FF:EE:00:00:10"
    static let heartRate = GATTCharacteristicID(service: .heartRateService, characteristic: .heartRateMeasurement)
    static let controlPoint = GATTCharacteristicID(
        service: .polarMeasurementDataService, characteristic: .polarMeasurementControlPoint)
    static let data = GATTCharacteristicID(service: .polarMeasurementDataService, characteristic: .polarMeasurementData)
    /// The H10's accelerometer as the daemon starts it (`PMDStreamKind`): 50 Hz, 16 bit, ±8 g.
    static let startACC = PMDCommand.startMeasurement(
        .acc, settings: [PMDSetting(.sampleRate, [50]), PMDSetting(.resolution, [16]), PMDSetting(.range, [8])])

    struct Figure {
        var cpu: Double
        var notifications: Int
        /// Messages on the bus during the window (bluez only), and the first few by name.
        var busMessages: Int?
        var busMessageNames: [String] = []
    }

    static func run() {
        do {
            let bus = try PrivateBus(seconds: Int(seconds) * 4 + 60)
            defer { bus.close() }
            let directory = bus.folder + "/emulated"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try bus.spawn(
                [
                    DaemonHarness.productsFolder + "/sensorkit-wearable", "--dir", directory, "--profile", "h10", "--address",
                    address,
                ],
                log: "wearable")
            let emulated = try measureEmulated(directory: directory)
            try bus.spawn(["/usr/bin/python3", script, bus.address, directory], log: "bluetoothd")
            let bluez = try measureBlueZ(bus: bus)
            func perHour(_ figure: Figure) -> String {
                let hour = figure.cpu * 3600 / seconds
                return String(
                    format: "%.2f s CPU per hour (%.3f %% of one core) [%d notifications in %.0f s]", hour, hour / 36,
                    figure.notifications, seconds)
            }
            print(
                "ble-bluez: one H10 (ECG + ACC + heart rate) received through bluetoothd (AcquireNotify fd): \(perHour(bluez))")
            let messages = bluez.busMessages ?? -1
            print(
                String(
                    format: "ble-bluez: %d D-Bus messages on the bus while streaming, %.4f per notification (target 0)", messages,
                    Double(messages) / Double(max(bluez.notifications, 1)))
                    + " [\(bluez.busMessageNames.joined(separator: ", "))]")
            print(
                "anchor: the same wearable over the emulated transport (GATTConnection on its ATT socket): \(perHour(emulated)); bluez ÷ emulated ×\(String(format: "%.2f", bluez.cpu / max(emulated.cpu, 1e-9))) (target ≤ ×1.5)"
            )
        } catch {
            print("ble-bluez: benchmark failed: \(error)")
        }
    }

    static func processCPUSeconds() -> Double { Double(LinuxSystemClock.read(CLOCK_PROCESS_CPUTIME_ID)) * 1e-9 }

    static func wait(_ what: String, seconds: Double = 20, until condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            guard Date() < deadline else { throw SystemError("waiting for \(what)", errno: ETIMEDOUT) }
            usleep(10_000)
        }
    }

    static func measureEmulated(directory: String) throws -> Figure {
        let queue = DispatchQueue(label: "bench.emulated")
        let count = Shared(0)
        let discovered = Shared<[GATTService]?>(nil)
        let attPath = directory + "/" + address + ".att"
        try wait("the emulated H10") { FileManager.default.fileExists(atPath: attPath) }
        let bearer = try SeqPacketATTBearer(connectingTo: attPath)
        var connection: GATTConnection!
        queue.sync {
            connection = GATTConnection(
                bearer: bearer, queue: queue, preferredMTU: 247, transactionTimeoutNanoseconds: 5_000_000_000
            ) {
                event in
                switch event {
                case .discovered(let services): discovered.withLock { $0 = services }
                case .notification, .indication: count.withLock { $0 += 1 }
                default: break
                }
            }
            connection.start()
        }
        try wait("discovery") { discovered.withLock { $0 } != nil }
        let services = discovered.withLock { $0 }!
        guard let hr = services.service(.heartRateService)?.characteristic(.heartRateMeasurement),
            let pmd = services.service(.polarMeasurementDataService),
            let cp = pmd.characteristic(.polarMeasurementControlPoint), let frames = pmd.characteristic(.polarMeasurementData)
        else { throw SystemError("the emulated H10 lacks HR or PMD", errno: ENOENT) }
        queue.sync {
            _ = connection.subscribe(hr)
            _ = connection.subscribe(cp)
            _ = connection.subscribe(frames)
            _ = connection.write(cp.valueHandle, value: PMDCommand.startECG.encoded())
            _ = connection.write(cp.valueHandle, value: startACC.encoded())
        }
        try wait("the first frames") { count.withLock { $0 } > 5 }
        let figure = measure(count)
        queue.sync {
            _ = connection.write(cp.valueHandle, value: PMDCommand.stopMeasurement(.ecg).encoded())
            _ = connection.write(cp.valueHandle, value: PMDCommand.stopMeasurement(.acc).encoded())
        }
        usleep(200_000)
        queue.sync { connection.close() }
        return figure
    }

    static func measureBlueZ(bus: PrivateBus) throws -> Figure {
        var transport: BlueZTransport?
        try wait("bluetoothd stand-in") {
            transport = try? BlueZTransport(bus: .address(bus.address))
            return transport != nil
        }
        guard let transport else { throw SystemError("no transport", errno: ENOENT) }
        defer { transport.close() }
        var report: BLEScanReport?
        try wait("the H10 in a scan") {
            report = (try? transport.scan())?.first { $0.address == address }
            return report != nil
        }
        let queue = DispatchQueue(label: "bench.bluez")
        let count = Shared(0)
        let ready = Shared(false)
        let subscribed = Shared(0)
        let link = try transport.connect(report!, queue: queue) { event in
            switch event {
            case .ready: ready.withLock { $0 = true }
            case .subscribed: subscribed.withLock { $0 += 1 }
            case .notification: count.withLock { $0 += 1 }
            default: break
            }
        }
        try wait("ready") { ready.withLock { $0 } }
        queue.sync {
            for id in [heartRate, controlPoint, data] { link.subscribe(id) }
        }
        try wait("subscriptions") { subscribed.withLock { $0 } == 3 }
        queue.sync {
            link.write(controlPoint, PMDCommand.startECG.encoded())
            link.write(controlPoint, startACC.encoded())
        }
        try wait("the first frames") { count.withLock { $0 } > 5 }
        let messages = Shared(0)
        let names = Shared<[String]>([])
        let monitor = DBusMonitor(
            rules: [], queue: DispatchQueue(label: "bench.monitor"), select: { _ in [] },
            handler: { event in
                guard case .message(let message) = event else { return }
                messages.withLock { $0 += 1 }
                let name = "\(message.kind) \(message.interface ?? "").\(message.member ?? "")"
                names.withLock { if $0.count < 8 { $0.append(name) } }
            })
        let watching = try DBusConnection(monitoring: .address(bus.address), monitor, description: "bench-monitor")
        // The broker's own answer to BecomeMonitor and the NameOwnerChanged it sends come first.
        usleep(500_000)
        let before = messages.withLock { $0 }
        names.withLock { $0 = [] }
        var figure = measure(count)
        figure.busMessages = messages.withLock { $0 } - before
        figure.busMessageNames = names.withLock { $0 }
        watching.close()
        queue.sync {
            link.write(controlPoint, PMDCommand.stopMeasurement(.ecg).encoded())
            link.write(controlPoint, PMDCommand.stopMeasurement(.acc).encoded())
        }
        usleep(200_000)
        queue.sync { link.close() }
        return figure
    }

    /// The process's CPU over `seconds` of streaming; the main thread sleeps meanwhile.
    static func measure(_ count: Shared<Int>) -> Figure {
        let before = (processCPUSeconds(), count.withLock { $0 })
        usleep(UInt32(seconds * 1_000_000))
        return Figure(cpu: processCPUSeconds() - before.0, notifications: count.withLock { $0 } - before.1)
    }
}

/// A value the feed's handlers and the measuring thread share.
final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ initial: Value) { value = Mutex(initial) }
    func withLock<R>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
}
