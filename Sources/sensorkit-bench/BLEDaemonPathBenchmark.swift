import BLEBridge
import Dispatch
import Foundation
import Glibc
import SensorDaemon
import SensorKitModel
import SensorSimulation
import SensorSystem
import Synchronization

/// `sensorkit-bench ble`, second figure: the CPU one H10 (130 Hz ECG in 73-sample frames + a
/// 1 Hz heart-rate measurement with two RR intervals) costs the daemon per hour of data, from the
/// ATT socket to committed chunks: a SEQPACKET socket pair carries the notifications as the
/// emulated transport does, a `GATTConnection` reads them, `PMDStreamTimeline` and
/// `HeartRateTimeline` put them on the timeline, `WearableSamples` gives the driver's columns, and
/// an in-process daemon's pipeline and store take them (the store is flushed and closed inside the
/// measurement). The hour is fed as fast as the path takes it (device and receive times come from
/// `H10ClockSimulation`). The feeding thread's own CPU is left out. Anchor, same run: the same
/// PDUs read from a socket pair and dropped.
enum BLEDaemonPathBenchmark {
    static let app = "org.sensorkit.bench-ble"
    static let hour: Int64 = 3_600_000_000_000

    /// One stream of the bench's wearable: the pipeline turns it on; the feed emits through it.
    final class FeedStream: SensorSource, @unchecked Sendable {
        let descriptor: SourceDescriptor
        private let deliver = Mutex<(@Sendable (SourceEvent) -> Void)?>(nil)
        init(_ descriptor: SourceDescriptor) { self.descriptor = descriptor }
        var isRecording: Bool { deliver.withLock { $0 != nil } }
        func setRecording(_ recording: Bool, deliver: @escaping @Sendable (SourceEvent) -> Void) {
            self.deliver.withLock { $0 = recording ? deliver : nil }
        }
        func close() { deliver.withLock { $0 = nil } }
        func emit(_ batch: SourceBatch) { deliver.withLock { $0 }?(.samples(batch)) }
    }

    static func run() {
        do {
            let anchor = try measure(daemonPath: false)
            let path = try measure(daemonPath: true)
            func perHour(_ seconds: Double) -> String {
                String(format: "%.2f s CPU per hour (%.3f %% of one core)", seconds, seconds / 36)
            }
            print(
                "ble: one H10 (130 Hz ECG, 73-sample frames, + 1 Hz heart rate with RR), 1 h of data from the ATT socket to committed chunks: \(perHour(path.cpu))"
                    + " [\(path.frames) ECG frames, \(path.notifications) notifications, \(path.samples) samples stored, \(String(format: "%.1f", path.wall)) s wall]"
            )
            print(
                "anchor: the same \(anchor.notifications) notifications read from the socket and dropped: \(perHour(anchor.cpu)); path ÷ anchor ×\(String(format: "%.1f", path.cpu / max(anchor.cpu, 1e-9)))"
            )
        } catch {
            print("ble: daemon path benchmark failed: \(error)")
        }
    }

    struct Result {
        var cpu: Double
        var wall: Double
        var frames: Int
        var notifications: Int
        var samples: Int
    }

    static func processCPUSeconds() -> Double { Double(LinuxSystemClock.read(CLOCK_PROCESS_CPUTIME_ID)) * 1e-9 }

    static func measure(daemonPath: Bool) throws -> Result {
        let clock = LinuxSystemClock()
        let device = SRDevice(
            identifier: "ble:C0:FF:EE:00:00:10", name: "Polar H10 0A0B0C0D", model: "H10",
            systemName: "Polar Electro Oy", systemVersion: "3.1.1", productType: "")
        let heart = FeedStream(WearableSamples.descriptor(.heartRate, device: device, wearable: "bench", location: nil))
        let ecg = FeedStream(WearableSamples.descriptor(.electrocardiogram, device: device, wearable: "bench", location: nil))
        var harness: DaemonHarness?
        if daemonPath {
            // The BLE driver's registry entry makes the sensors recordable; its discovery is not run
            // (the harness adds only the sources given).
            let config =
                "profile = lab\n[ble]\ntransport = emulated:/nonexistent\n[wearable bench]\naddress = C0:FF:EE:00:00:10\nstreams = heartRate, electrocardiogram\n"
            let made = try DaemonHarness(config: config, sources: [heart, ecg]) { folder in
                try DaemonHarness.writeApp(
                    app, in: folder + "/apps.d", entitlements: ["heart-rate", "ecg"], users: ["root", String(getuid())])
            }
            harness = made
            try made.grant([.heartRate, .electrocardiogram], to: app)
            let connection = try made.connect(app: app)
            defer { connection.close() }
            for sensor in [SRSensor.heartRate, .electrocardiogram] {
                if let error = connection.call(.startRecording, { $0.sensor = sensor.rawValue }).error { throw error }
            }
            guard DaemonHarness.eventually(10, { heart.isRecording && ecg.isRecording }) else {
                made.stop()
                throw SystemError("the bench's wearable streams did not start recording", errno: 0)
            }
        }

        let (daemonEnd, deviceEnd) = try SeqPacketSocket.pair()
        defer { SystemCalls.close(deviceEnd) }
        let queue = DispatchQueue(label: "sensorkit-bench.ble")
        let receiveTimes = Mutex<[Int64]>([])
        let received = Mutex(0)
        let stored = Mutex(0)
        let boot = clock.bootID
        // Confined to `queue`.
        final class Timelines: @unchecked Sendable {
            var heart = HeartRateTimeline()
            var ecg = PMDStreamTimeline(measurementType: .ecg, sampleRateHz: 130)
        }
        let timelines = Timelines()
        @Sendable func take(_ events: [PMDStreamTimeline.Event]) {
            for case .frame(let timed) in events {
                let values = WearableSamples.electrocardiogram(timed, sampleRate: 130, sessionStart: 0)
                ecg.emit(
                    SourceBatch(
                        boot: boot, sensorTimes: timed.sampleTimes,
                        receiveTimes: .init(repeating: timed.receiveTime, count: timed.sampleTimes.count), values: values,
                        for: ecg.descriptor))
                stored.withLock { $0 += timed.sampleTimes.count }
            }
        }
        var reader: (any DispatchSourceRead)?
        var connection: GATTConnection?
        if daemonPath {
            let made = GATTConnection(
                bearer: SeqPacketATTBearer(fileDescriptor: daemonEnd), queue: queue,
                transactionTimeoutNanoseconds: hour * 24
            ) { event in
                guard case .notification(let handle, let value) = event else { return }
                let time = receiveTimes.withLock { $0.removeFirst() }
                if handle == 0x0010 {
                    let output = timelines.heart.receive(value, at: time)
                    if let beat = output.beat {
                        heart.emit(
                            SourceBatch(
                                boot: boot, sensorTimes: [time], receiveTimes: [time],
                                values: WearableSamples.heartRate(beat, contact: .inContact), for: heart.descriptor))
                        stored.withLock { $0 += 1 }
                    }
                } else {
                    take(timelines.ecg.receive(value, at: time))
                }
                received.withLock { $0 += 1 }
            }
            connection = made
            queue.sync { made.start() }  // its MTU request is never answered; notifications flow regardless
        } else {
            let source = DispatchSource.makeReadSource(fileDescriptor: daemonEnd, queue: queue)
            source.setEventHandler {
                while case .done(.packet)? = try? SeqPacketSocket.receive(daemonEnd, capacity: ATTPDU.maximumMTU) {
                    received.withLock { $0 += 1 }
                }
            }
            source.resume()
            reader = source
        }

        let now = clock.boottimeNanoseconds()
        var simulation = H10ClockSimulation(seed: 2026, hostStart: max(1_000_000_000, now - hour - 60_000_000_000))
        let end = simulation.hostStart + hour
        var nextBeat = simulation.hostStart + 1_000_000_000
        var sent = 0
        var frames = 0
        func send(_ pdu: [UInt8], at time: Int64) throws {
            receiveTimes.withLock { $0.append(time) }
            while case .wouldBlock = try SeqPacketSocket.send(deviceEnd, pdu) { sched_yield() }
            sent += 1
        }
        let wallStart = clock.boottimeNanoseconds()
        let cpuStart = processCPUSeconds()
        let feederStart = StoreBenchmark.threadCPUSeconds()
        while true {
            let frame = simulation.next()
            guard frame.receiveTime < end else { break }
            while nextBeat <= frame.receiveTime {
                try send([0x1B, 0x10, 0x00, 0x16, 72, 0x40, 0x03, 0x44, 0x03], at: nextBeat)
                nextBeat += 1_000_000_000
            }
            try send([0x1B, 0x20, 0x00] + frame.bytes, at: frame.receiveTime)
            frames += 1
        }
        let feederCPU = StoreBenchmark.threadCPUSeconds() - feederStart
        while received.withLock({ $0 }) < sent { usleep(1_000) }
        queue.sync {
            take(timelines.ecg.finish())
            connection?.close()
            reader?.cancel()
        }
        harness?.stop()  // the pipeline drains, the store flushes and closes: every chunk committed
        let cpu = processCPUSeconds() - cpuStart - feederCPU
        let wall = Double(clock.boottimeNanoseconds() - wallStart) * 1e-9
        if !daemonPath { SystemCalls.close(daemonEnd) }
        return Result(cpu: cpu, wall: wall, frames: frames, notifications: sent, samples: stored.withLock { $0 })
    }
}
