import Dispatch
import Foundation
import SensorKitModel
import SensorSystem
import SensorTestKit
import Synchronization
import Testing

@testable import IIOBridge

/// What a consumer received, collected across threads.
final class EventLog: Sendable {
    private let events = Mutex<[SourceEvent]>([])

    var deliver: @Sendable (SourceEvent) -> Void { { event in self.events.withLock { $0.append(event) } } }

    var all: [SourceEvent] { events.withLock { $0 } }

    var batches: [SourceBatch] { all.compactMap { if case let .samples(batch) = $0 { batch } else { nil } } }

    var sensorTimes: [Int64] { batches.flatMap(\.sensorTimes) }

    func column(_ index: Int) -> [Int64] { batches.flatMap { $0.columns[index] } }

    var gaps: [(from: Int64, to: Int64, why: String)] {
        all.compactMap { if case let .gap(from, to, _, why) = $0 { (from.nanoseconds, to.nanoseconds, why) } else { nil } }
    }

    /// Waits up to `seconds` for `count` samples.
    func waitFor(samples count: Int, seconds: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if sensorTimes.count >= count { return true }
            usleep(5_000)
        }
        return sensorTimes.count >= count
    }
}

/// Collects log lines.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    var log: Journal { Journal { line in self.lines.withLock { $0.append(line) } } }
    var all: [String] { lines.withLock { $0 } }
}

/// A BMI160 in a temporary sysfs tree whose `/dev` node is a FIFO the test writes scans into in
/// random chunks (partial scans, as umockdev's PTY delivers them). The test holds the FIFO open
/// read-write, so the capture's non-blocking reads see EAGAIN, never EOF, until it closes it.
@Suite(.serialized) struct IIODeviceCaptureTests {
    let tree = FakeSysfsTree()
    let fifo: String
    let end: FifoEnd
    var writer: Int32 { end.fd }
    static let ms: Int64 = 1_000_000

    /// The test's end of the FIFO, closed when the test is done (or earlier, to make EOF).
    final class FifoEnd {
        private(set) var fd: Int32
        init(_ path: String) { fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC) }
        func close() {
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
        }
        deinit { close() }
    }

    init() throws {
        fifo = tree.root + "/iio-fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        end = FifoEnd(fifo)
        #expect(end.fd >= 0)
    }

    /// Most tests look at what one read delivers, so by default nothing is held (`deliveryHold` 0).
    func makeCapture(
        _ attributes: ChipFixtures.Attributes = ChipFixtures.bmi160, clock: FakeClock = FakeClock(),
        pairing: ClockPairing = .system, log: Journal = .discard,
        deliveryHold: Int64 = 0
    ) throws -> (IIOChip, IIODeviceCapture) {
        let sysfs = tree.addDevice(0, attributes)
        let udev = UdevIIODevice(syspath: sysfs.directory.path, sysname: "iio:device0", devnode: fifo, properties: [:])
        let chip = try IIOChip(udev: udev, description: try sysfs.describe(), triggers: ["bmi160-trigger"])
        let capture = IIODeviceCapture(
            sysfs: sysfs, devnode: fifo, description: chip.description, plan: chip.capturePlan!,
            controlQueue: DispatchQueue(label: "capture-test-control"), clock: clock,
            pairing: pairing, log: log, deliveryHold: deliveryHold)
        return (chip, capture)
    }

    func attribute(_ name: String) -> String? {
        (try? String(contentsOfFile: tree.root + "/iio:device0/" + name, encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Writes bytes in random pieces of 1…61 bytes (a deterministic seed).
    func feed(_ bytes: [UInt8], seed: UInt64 = 11) {
        var random = SeededGenerator(seed: seed)
        var rest = bytes[...]
        while !rest.isEmpty {
            let size = min(rest.count, Int(random.next() % 61) + 1)
            let written = rest.prefix(size).withUnsafeBytes { Glibc.write(writer, $0.baseAddress, $0.count) }
            #expect(written == size)
            rest = rest.dropFirst(size)
            if random.next() % 4 == 0 { usleep(200) }
        }
    }

    /// Scans in the chip's 24-byte layout: values depend on the index so misplaced bytes show.
    static func scans(
        _ layout: ScanLayout, count: Int, start: Int64, period: Int64, jumpAfter: Int? = nil,
        jump: Int64 = 300 * ms
    ) -> ([UInt8], [Int64]) {
        var bytes: [UInt8] = []
        var stamps: [Int64] = []
        for i in 0..<count {
            let t = start + Int64(i) * period + (jumpAfter.map { i > $0 ? jump : 0 } ?? 0)
            stamps.append(t)
            // Layout order: in_anglvel_x/y/z (index 4–6), in_accel_x/y/z (7–9).
            let values: [Int64] = [Int64(i), -Int64(i), 7, 1_000 + Int64(i), -16_392 + Int64(i), 40]
            bytes += ScanEncoder.encode(layout, values: values, timestamp: t)
        }
        return (bytes, stamps)
    }

    @Test func enablesOnFirstSubscriberSharesScansAndDisablesAfterTheLast() throws {
        let clock = FakeClock()
        let (chip, capture) = try makeCapture(clock: clock)
        let accel = EventLog(), gyro = EventLog()
        let accelSource = IIOBufferedSource(chip: chip, function: chip.functions[0], capture: capture)
        let gyroSource = IIOBufferedSource(chip: chip, function: chip.functions[1], capture: capture)
        #expect(attribute("buffer/enable") == "0")

        accelSource.setRecording(true, deliver: accel.deliver)
        accelSource.setRecording(true, deliver: accel.deliver)  // idempotent
        capture.settle()
        // The documented enable sequence ran: everything the plan names is on.
        #expect(attribute("buffer/enable") == "1")
        #expect(attribute("current_timestamp_clock") == "boottime")
        #expect(attribute("trigger/current_trigger") == "bmi160-trigger")
        #expect(attribute("buffer/length") == "1024" && attribute("buffer/watermark") == "10")
        for channel in ["in_accel_x", "in_accel_z", "in_anglvel_y", "in_timestamp"] {
            #expect(attribute("scan_elements/\(channel)_en") == "1", "\(channel)")
        }
        gyroSource.setRecording(true, deliver: gyro.deliver)
        capture.settle()

        let start: Int64 = 7_000 * Self.ms
        let (bytes, stamps) = Self.scans(capture.plan.layout, count: 300, start: start, period: 10 * Self.ms)
        feed(bytes)
        #expect(accel.waitFor(samples: 300) && gyro.waitFor(samples: 300))
        #expect(accel.sensorTimes == stamps, "kernel boottime stamps are kept as they are")
        #expect(accel.column(0) == (0..<300).map { 1_000 + Int64($0) })
        #expect(accel.column(1) == (0..<300).map { -16_392 + Int64($0) })
        #expect(accel.column(2) == Array(repeating: 40, count: 300))
        #expect(gyro.column(1) == (0..<300).map { -Int64($0) })
        #expect(accel.batches.allSatisfy { $0.sensorTimes.last! - $0.sensorTimes.first! < 1_000_000_000 })
        #expect(
            accel.batches.allSatisfy {
                $0.boot == clock.bootID && $0.receiveTimes.allSatisfy { $0 == clock.boottimeNanoseconds() }
            })
        #expect(accel.gaps.isEmpty)

        // One leaves: the buffer stays on for the other.
        gyroSource.setRecording(false) { _ in }
        capture.settle()
        #expect(attribute("buffer/enable") == "1")
        let (more, moreStamps) = Self.scans(capture.plan.layout, count: 10, start: start + 3_000 * Self.ms, period: 10 * Self.ms)
        feed(more)
        #expect(accel.waitFor(samples: 310))
        #expect(gyro.sensorTimes.count == 300)
        #expect(Array(accel.sensorTimes.suffix(10)) == moreStamps)

        // The last leaves: teardown in order, everything off.
        accelSource.close()
        capture.settle()
        #expect(attribute("buffer/enable") == "0")
        #expect(attribute("trigger/current_trigger") == "")
        #expect(attribute("scan_elements/in_accel_x_en") == "0" && attribute("scan_elements/in_timestamp_en") == "0")
        // Closed sources ignore later calls.
        accelSource.setRecording(true, deliver: accel.deliver)
        capture.settle()
        #expect(attribute("buffer/enable") == "0")
    }

    @Test func aTimestampJumpBecomesAGap() throws {
        let (chip, capture) = try makeCapture()
        let accel = EventLog()
        let source = IIOBufferedSource(chip: chip, function: chip.functions[0], capture: capture)
        source.setRecording(true, deliver: accel.deliver)
        capture.settle()
        let (bytes, stamps) = Self.scans(
            capture.plan.layout, count: 60, start: 1_000 * Self.ms, period: 10 * Self.ms, jumpAfter: 29)
        feed(bytes)
        #expect(accel.waitFor(samples: 60))
        #expect(accel.sensorTimes == stamps)
        #expect(accel.gaps.count == 1)
        #expect(accel.gaps.first.map { ($0.from, $0.to) } ?? (0, 0) == (stamps[29], stamps[30]))
        #expect(accel.gaps.first?.why.hasPrefix("kernel FIFO overflow: no samples for 310.0 ms") == true)
        source.close()
        capture.settle()
    }

    /// The fixture's BMI160 has a sampling frequency for its accelerometer only, so the gyroscope's
    /// stream had no period and saw no gap where a 0.5 s jump lost the scans of both: the jump is
    /// the chip's, and each stream the scans feed gets a gap over the same span.
    @Test func aTimestampJumpIsAGapForEveryStreamOfTheChip() throws {
        // As in Tests/Fixtures/iio/bmi160.umockdev: no in_anglvel_sampling_frequency.
        let (chip, capture) = try makeCapture(ChipFixtures.bmi160.filter { !$0.key.hasPrefix("in_anglvel_sampling_frequency") })
        #expect(capture.plan.rates[chip.functions[1].kind]?.period == nil)
        let accel = EventLog(), gyro = EventLog()
        let accelSource = IIOBufferedSource(chip: chip, function: chip.functions[0], capture: capture)
        let gyroSource = IIOBufferedSource(chip: chip, function: chip.functions[1], capture: capture)
        accelSource.setRecording(true, deliver: accel.deliver)
        gyroSource.setRecording(true, deliver: gyro.deliver)
        capture.settle()
        let (bytes, stamps) = Self.scans(
            capture.plan.layout, count: 60, start: 1_000 * Self.ms, period: 10 * Self.ms,
            jumpAfter: 29, jump: 500 * Self.ms)
        feed(bytes)
        #expect(accel.waitFor(samples: 60) && gyro.waitFor(samples: 60))
        for log in [accel, gyro] {
            #expect(log.gaps.map { [$0.from, $0.to] } == [[stamps[29], stamps[30]]])
            #expect(
                log.gaps.first?.why.hasPrefix("kernel FIFO overflow: no samples for 510.0 ms at a 10.0 ms period") == true,
                "\(log.gaps.map(\.why))")
        }
        accelSource.close()
        gyroSource.close()
        capture.settle()
    }

    /// A glitching chip stamps one scan `INT64_MAX` and another `INT64_MIN`: the step to them
    /// overflowed in the batcher and trapped, killing the daemon. They are dropped, counted in
    /// the log, and the steps over them are gaps (deletion records) that name the bad time.
    @Test func scansWithImpossibleTimestampsAreDroppedAsGaps() throws {
        let log = LogLines()
        let (chip, capture) = try makeCapture(log: log.log)
        let accel = EventLog()
        let source = IIOBufferedSource(chip: chip, function: chip.functions[0], capture: capture)
        source.setRecording(true, deliver: accel.deliver)
        capture.settle()
        let layout = capture.plan.layout
        var stamps = (0..<40).map { 1_000 * Self.ms + Int64($0) * 10 * Self.ms }
        stamps[10] = .max
        stamps[20] = .min
        var bytes: [UInt8] = []
        for (i, t) in stamps.enumerated() {
            bytes += ScanEncoder.encode(layout, values: [Int64(i), 0, 7, 1_000 + Int64(i), 0, 40], timestamp: t)
        }
        feed(bytes)
        let kept = stamps.indices.filter { $0 != 10 && $0 != 20 }
        #expect(accel.waitFor(samples: kept.count))
        #expect(accel.sensorTimes == kept.map { stamps[$0] })
        #expect(accel.column(0) == kept.map { 1_000 + Int64($0) })
        #expect(accel.gaps.map(\.from) == [stamps[9], stamps[19]])
        #expect(accel.gaps.map(\.to) == [stamps[11], stamps[21]])
        #expect(accel.gaps.allSatisfy { $0.why.contains("scans dropped: sensor time") }, "\(accel.gaps)")
        #expect(accel.gaps.first?.why.contains("\(Int64.max)") == true)
        #expect(log.all.contains { $0.contains("impossible timestamp and were dropped") }, "\(log.all)")
        source.close()
        capture.settle()
    }

    @Test func anotherKernelClockIsMappedWithPairedReadings() throws {
        // The kernel keeps stamping with realtime: the attribute cannot be written (a directory
        // stands in for a read-only file, since root may write any file).
        let log = LogLines()
        let offset: Int64 = -1_795_000_000 * 1_000_000_000
        let (chip, capture) = try makeCapture(pairing: ClockPairing { clock in clock == .realtime ? offset : 0 }, log: log.log)
        let path = tree.root + "/iio:device0/current_timestamp_clock"
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        let accel = EventLog()
        let source = IIOBufferedSource(chip: chip, function: chip.functions[0], capture: capture)
        source.setRecording(true, deliver: accel.deliver)
        capture.settle()
        let wall: Int64 = 1_795_000_123 * 1_000_000_000
        let (bytes, stamps) = Self.scans(capture.plan.layout, count: 20, start: wall, period: 10 * Self.ms)
        feed(bytes)
        #expect(accel.waitFor(samples: 20))
        #expect(accel.sensorTimes == stamps.map { $0 + offset })
        #expect(
            log.all.contains { $0.hasPrefix("<5>iio:device0: current_timestamp_clock:") && $0.hasSuffix(", ignoring") },
            "\(log.all)")
        #expect(log.all.contains("<5>iio:device0 (bmi160): timestamps are \(TimestampMapping.mapped(.realtime))"), "\(log.all)")
        source.close()
        capture.settle()
    }

    @Test func endOfFileStopsReadingWithOneLineAndRetireTurnsEverythingOff() throws {
        let log = LogLines()
        let (chip, capture) = try makeCapture(log: log.log)
        let accel = EventLog()
        let source = IIOBufferedSource(chip: chip, function: chip.functions[0], capture: capture)
        source.setRecording(true, deliver: accel.deliver)
        capture.settle()
        let (bytes, _) = Self.scans(capture.plan.layout, count: 5, start: 1_000 * Self.ms, period: 10 * Self.ms)
        feed(bytes + [1, 2, 3])  // and a partial scan that never completes
        #expect(accel.waitFor(samples: 5))
        end.close()  // no writer left: read() returns 0
        let deadline = Date().addingTimeInterval(5)
        while !log.all.contains(where: { $0.contains("end of file") }) && Date() < deadline { usleep(5_000) }
        #expect(log.all.filter { $0.contains("end of file") }.count == 1, "\(log.all)")
        capture.retire()
        capture.settle()
        #expect(attribute("buffer/enable") == "0")
        // A retired capture ignores new subscribers.
        source.setRecording(false) { _ in }
        source.setRecording(true, deliver: accel.deliver)
        capture.settle()
        #expect(attribute("buffer/enable") == "0")
        #expect(accel.sensorTimes.count == 5)
    }

    /// A chip read ten times a second must not wake the pipeline ten times a second: each stream
    /// gets a batch when it spans its half second (`SampleBatcher.maximumSpan`), and what it still
    /// holds when it stops is handed over before `setRecording(false)` returns (the pipeline drops
    /// what comes after its stop).
    @Test func streamsGetABatchEveryHalfSecondAndWhatTheyHoldWhenTheyStop() throws {
        let (chip, capture) = try makeCapture(deliveryHold: IIODeviceCapture.defaultDeliveryHold)
        let accel = EventLog(), gyro = EventLog()
        let accelSource = IIOBufferedSource(chip: chip, function: chip.functions[0], capture: capture)
        let gyroSource = IIOBufferedSource(chip: chip, function: chip.functions[1], capture: capture)
        accelSource.setRecording(true, deliver: accel.deliver)
        gyroSource.setRecording(true, deliver: gyro.deliver)
        capture.settle()
        // 2.5 s of scans in ten-scan bursts, as a kernel buffer with a 100 ms watermark hands them over.
        let (bytes, stamps) = Self.scans(capture.plan.layout, count: 250, start: 1_000 * Self.ms, period: 10 * Self.ms)
        let burst = capture.plan.layout.scanBytes * 10
        for start in stride(from: 0, to: bytes.count, by: burst) {
            feed(Array(bytes[start..<min(start + burst, bytes.count)]))
            usleep(2_000)
        }
        #expect(accel.waitFor(samples: 200) && gyro.waitFor(samples: 200))
        usleep(100_000)
        #expect(accel.batches.map(\.count) == [50, 50, 50, 50], "\(accel.batches.map(\.count))")
        #expect(gyro.batches.map(\.count) == [50, 50, 50, 50], "\(gyro.batches.map(\.count))")

        gyroSource.setRecording(false) { _ in }
        #expect(gyro.sensorTimes == stamps, "the held half second went out with the stop")
        accelSource.close()
        #expect(accel.sensorTimes == stamps)
        capture.settle()
    }

    /// A chip's streams are turned on one by one (each on its own queue): the first starts the
    /// buffer and its reads went to it alone, so a second stream whose subscription was still
    /// waiting for the capture's queues lost the scans read meanwhile, silently (the end-to-end
    /// test lost the accelerometer's first 20 scans under load). A stream gets every scan read
    /// since it asked, and none read before.
    @Test func aStreamJoiningARunningBufferGetsTheScansReadSinceItAsked() throws {
        let clock = FakeClock()
        let (chip, capture) = try makeCapture(clock: clock)
        let accel = EventLog(), gyro = EventLog()
        let accelSource = IIOBufferedSource(chip: chip, function: chip.functions[0], capture: capture)
        let gyroSource = IIOBufferedSource(chip: chip, function: chip.functions[1], capture: capture)
        gyroSource.setRecording(true, deliver: gyro.deliver)
        capture.settle()
        let layout = capture.plan.layout
        let (early, _) = Self.scans(layout, count: 10, start: 1_000 * Self.ms, period: 10 * Self.ms)
        feed(early)
        #expect(gyro.waitFor(samples: 10))
        #expect(capture.keptScanCount == 0, "nobody joining: nothing kept")

        // The accelerometer asks while the control queue is busy: it joins only after more reads.
        clock.advance(nanoseconds: 5 * Self.ms)
        let gate = DispatchSemaphore(value: 0)
        capture.controlQueue.async { gate.wait() }
        accelSource.setRecording(true, deliver: accel.deliver)
        let (asked, stamps) = Self.scans(layout, count: 30, start: 1_100 * Self.ms, period: 10 * Self.ms)
        feed(asked)
        #expect(gyro.waitFor(samples: 40))
        #expect(accel.sensorTimes.isEmpty)
        gate.signal()
        capture.settle()
        #expect(accel.waitFor(samples: 30, seconds: 3))
        #expect(accel.sensorTimes == stamps, "every scan read since it asked, none from before")
        #expect(accel.column(0) == (0..<30).map { 1_000 + Int64($0) })
        #expect(accel.gaps.isEmpty)

        // Both go on with the same scans.
        let (later, laterStamps) = Self.scans(layout, count: 10, start: 1_500 * Self.ms, period: 10 * Self.ms)
        feed(later)
        #expect(accel.waitFor(samples: 40) && gyro.waitFor(samples: 50))
        #expect(capture.keptScanCount == 0, "nobody on its way again: the next read dropped what the join kept")
        #expect(accel.sensorTimes == stamps + laterStamps)
        #expect(Array(gyro.sensorTimes.suffix(40)) == stamps + laterStamps)
        accelSource.close()
        gyroSource.close()
        capture.settle()
    }

    /// The scans kept for a late stream are bounded (2 s of scans); a stream that joins after
    /// more than that was read since it asked gets a gap for what it missed, not silence.
    @Test func aStreamJoiningLaterThanTheKeptScansGetsAGapForTheRest() throws {
        let layout = try makeCapture().1.plan.layout
        var fanOut = ScanFanOut(layout: layout, boot: BootID("boot-0"), scanPeriod: 10 * Self.ms)
        let capacity = fanOut.recent.capacity
        #expect(capacity == 200)
        let count = 2 * capacity + 50
        let stamps = (0..<count).map { 1_000 * Self.ms + Int64($0) * 10 * Self.ms }
        let values = (0..<count).flatMap { i in (0..<layout.valueCount).map { Int64(i * 10 + $0) } }
        fanOut.distribute(values: values, sensorTimes: stamps, receivedAt: 9_000 * Self.ms)
        let late = EventLog(), fresh = EventLog()
        fanOut.adopt([
            ScanConsumer(
                id: ObjectIdentifier(late), channels: ["in_accel_x", "in_accel_y", "in_accel_z"], period: 10 * Self.ms,
                since: 8_000 * Self.ms, deliver: late.deliver),
            ScanConsumer(
                id: ObjectIdentifier(fresh), channels: ["in_accel_x", "in_accel_y", "in_accel_z"], period: 10 * Self.ms,
                since: 9_500 * Self.ms, deliver: fresh.deliver),
        ])
        fanOut.deliverAll()
        let kept = Array(stamps.suffix(capacity))
        #expect(late.sensorTimes == kept)
        #expect(late.gaps.map { [$0.from, $0.to] } == [[kept[0] - 10 * Self.ms, kept[0]]], "\(late.gaps)")
        #expect(late.gaps.first?.why.contains("no longer held") == true)
        #expect(fresh.all.isEmpty, "nothing was read after it asked")
    }

    /// A fan-out told that nobody is joining keeps no read; a stream that asked before such a
    /// read was received gets a gap for it, one that asked after gets no gap and the reads kept
    /// once keeping resumed.
    @Test func readsNotKeptForJoinersAreAGapForAnOlderRequestOnly() throws {
        let layout = try makeCapture().1.plan.layout
        var fanOut = ScanFanOut(layout: layout, boot: BootID("boot-0"), scanPeriod: 10 * Self.ms)
        func read(_ first: Int, count: Int, at receive: Int64) -> [Int64] {
            let stamps = (first..<(first + count)).map { 1_000 * Self.ms + Int64($0) * 10 * Self.ms }
            let values = (first..<(first + count)).flatMap { i in (0..<layout.valueCount).map { Int64(i * 10 + $0) } }
            fanOut.distribute(values: values, sensorTimes: stamps, receivedAt: receive)
            return stamps
        }
        fanOut.keepsRecent = false
        _ = read(0, count: 10, at: 1_100 * Self.ms)
        #expect(fanOut.recent.count == 0)
        fanOut.keepsRecent = true
        let kept = read(10, count: 10, at: 1_200 * Self.ms)
        let older = EventLog(), newer = EventLog()
        func consumer(_ log: EventLog, since: Int64) -> ScanConsumer {
            ScanConsumer(
                id: ObjectIdentifier(log), channels: ["in_accel_x", "in_accel_y", "in_accel_z"], period: 10 * Self.ms,
                since: since, deliver: log.deliver)
        }
        fanOut.adopt([consumer(older, since: 1_050 * Self.ms), consumer(newer, since: 1_150 * Self.ms)])
        fanOut.deliverAll()
        #expect(older.sensorTimes == kept && newer.sensorTimes == kept)
        #expect(older.gaps.count == 1 && older.gaps.first?.why.contains("no longer held") == true, "\(older.gaps)")
        #expect(newer.gaps.isEmpty)
    }

    /// One hand-over per chip (docs/iio.md §4, "Delivery"): a stream that joined 0.2 s after its
    /// sibling, and so would fill its half-second batches at another phase, hands over with the
    /// sibling at every hand-over — each a wake-up of the store's writer — and loses nothing.
    @Test func aChipHandsOverEveryStreamAtOnce() throws {
        let layout = try makeCapture().1.plan.layout
        var fanOut = ScanFanOut(layout: layout, boot: BootID("boot-0"), scanPeriod: 10 * Self.ms)
        let accel = EventLog(), gyro = EventLog()
        func consumer(_ log: EventLog, _ channels: [String]) -> ScanConsumer {
            ScanConsumer(id: ObjectIdentifier(log), channels: channels, period: 10 * Self.ms, deliver: log.deliver)
        }
        fanOut.adopt([consumer(accel, ["in_accel_x", "in_accel_y", "in_accel_z"])])
        var handOvers: [(accel: Int, gyro: Int)] = []
        var stamps: [Int64] = []
        // 3 s of reads of ten scans (100 ms each); the gyroscope joins after the second read.
        for read in 0..<30 {
            if read == 2 { fanOut.adopt([consumer(gyro, ["in_anglvel_x", "in_anglvel_y", "in_anglvel_z"])]) }
            let times = (0..<10).map { 1_000 * Self.ms + Int64(read * 10 + $0) * 10 * Self.ms }
            let values = (0..<10).flatMap { i in (0..<layout.valueCount).map { Int64(read * 100 + i * 10 + $0) } }
            let before = (accel.batches.count, gyro.batches.count)
            fanOut.distribute(values: values, sensorTimes: times, receivedAt: times.last! + Self.ms)
            if read >= 2 { stamps += times }
            let handed = (accel.batches.count - before.0, gyro.batches.count - before.1)
            if handed != (0, 0) { handOvers.append(handed) }
        }
        fanOut.deliverAll()
        #expect(handOvers.count >= 5, "\(handOvers)")
        #expect(
            handOvers.dropFirst().allSatisfy { $0 == (1, 1) },
            "after the first, every hand-over carries both streams: \(handOvers)")
        #expect(accel.sensorTimes.count == 300)
        #expect(gyro.sensorTimes == stamps, "the later stream lost nothing")
        #expect(accel.gaps.isEmpty && gyro.gaps.isEmpty)
    }

    /// A `SampleStaging` in memory, keeping every publication.
    final class MemoryStaging: SampleStaging, @unchecked Sendable {
        let capacity: Int
        let stride: Int
        let slots: UnsafeMutablePointer<Int64>
        private let published = Mutex<[(count: Int, continuing: Int64?)]>([])
        init(capacity: Int, columns: Int) {
            self.capacity = capacity
            stride = 2 + columns
            slots = .allocate(capacity: (2 + columns) * capacity)
            slots.initialize(repeating: -1, count: (2 + columns) * capacity)
        }
        deinit { slots.deallocate() }
        func publish(count: Int, continuing: Int64?) { published.withLock { $0.append((count, continuing)) } }
        var last: (count: Int, continuing: Int64?)? { published.withLock { $0.last } }
        var publications: Int { published.withLock { $0.count } }
        func counts(since start: Int) -> [Int] { published.withLock { $0[start...].map(\.count) } }
        func column(_ index: Int, count: Int) -> [Int64] { (0..<count).map { slots[$0 * stride + index] } }
    }

    /// Staged streams (docs/iio.md §4, "Staged batches"): the first batch of a run goes out after
    /// half a second, the next ones after five; after every read the staging holds exactly what
    /// the stream holds, published with the last sample handed over before it; a gap makes the
    /// next batch short again (a replay could not prove it continues what was stored). A fan-out
    /// that collects its deliveries (a reading thread's) sends nothing, and publishes no samples
    /// held behind a batch, until told — then the same, in the same order.
    @Test(arguments: [false, true])
    func stagedStreamsHandOverEveryFiveSecondsAndMirrorWhatTheyHold(collects: Bool) throws {
        let layout = try makeCapture().1.plan.layout
        var fanOut = ScanFanOut(
            layout: layout, boot: BootID("boot-0"), scanPeriod: 10 * Self.ms, stagedSpan: SampleBatcher.stagedSpan,
            collectsDeliveries: collects)
        let accel = EventLog()
        let staging = MemoryStaging(capacity: 1024, columns: 3)
        fanOut.adopt([
            ScanConsumer(
                id: ObjectIdentifier(accel), channels: ["in_accel_x", "in_accel_y", "in_accel_z"], period: 10 * Self.ms,
                staging: staging, deliver: accel.deliver)
        ])
        var fed: [Int64] = []
        var values: [Int64] = []
        var handedAt: [Int] = []
        // 13 s of reads of ten scans (100 ms each), then a second's jump, then 2 s more.
        for read in 0..<150 {
            let skip: Int64 = read >= 130 ? 1_000 * Self.ms : 0
            let times = (0..<10).map { 1_000 * Self.ms + skip + Int64(read * 10 + $0) * 10 * Self.ms }
            let scanValues = (0..<10).flatMap { i in (0..<layout.valueCount).map { Int64(read * 100 + i * 10 + $0) } }
            let before = accel.batches.count
            let publications = staging.publications
            fanOut.distribute(values: scanValues, sensorTimes: times, receivedAt: times.last! + Self.ms)
            if fanOut.hasCollected {
                #expect(collects && accel.batches.count == before, "read \(read): collected, not sent")
                // The flush's retraction (0) comes at once; what the staging holds after the batch waits.
                #expect(staging.counts(since: publications) == [0], "read \(read): published before the batch was sent")
                fanOut.deliverCollected()
            }
            #expect(!fanOut.hasCollected)
            fed += times
            values += (0..<10).map { scanValues[$0 * layout.valueCount + layout.slot(for: "in_accel_x")!.firstValue!] }
            if accel.batches.count > before { handedAt.append(read) }
            let held = fed.count - accel.sensorTimes.count
            let published = try #require(staging.last)
            #expect(published.count == held, "read \(read)")
            #expect(staging.column(0, count: held) == Array(fed.suffix(held)), "read \(read): the held sensor times")
            #expect(staging.column(2, count: held) == Array(values.suffix(held)), "read \(read): the held x values")
            // What the held batch continues: the batch handed over last, unless a gap came after it.
            var continues: Int64?
            if case .samples(let batch)? = accel.all.last { continues = batch.sensorTimes.last }
            #expect(published.continuing == continues, "read \(read)")
        }
        // Cut at 0.5 s, then every 5 s; the jump (read 130) cuts and is a gap; the batch after it
        // is short (the chip's half second since the last cut has passed: out at the next read).
        #expect(handedAt == [5, 55, 105, 130, 131], "\(handedAt)")
        #expect(accel.gaps.count == 1)
        fanOut.deliverAll()
        fanOut.deliverCollected()
        #expect(accel.sensorTimes == fed)
        #expect(staging.last?.count == 0)
    }

    /// A chip that goes quiet does not keep its last samples: they go out once they have waited
    /// the hold, measured on the capture's clock.
    @Test func whatAQuietChipHoldsGoesOutAfterTheHold() throws {
        let clock = FakeClock()
        let (chip, capture) = try makeCapture(clock: clock, deliveryHold: 200 * Self.ms)
        let accel = EventLog()
        let source = IIOBufferedSource(chip: chip, function: chip.functions[0], capture: capture)
        source.setRecording(true, deliver: accel.deliver)
        capture.settle()
        let (bytes, stamps) = Self.scans(capture.plan.layout, count: 20, start: 1_000 * Self.ms, period: 10 * Self.ms)
        feed(bytes)
        usleep(400_000)
        #expect(accel.sensorTimes.isEmpty, "held: the clock has not moved")
        clock.advance(nanoseconds: 250 * Self.ms)
        #expect(accel.waitFor(samples: 20, seconds: 3))
        #expect(accel.sensorTimes == stamps)
        source.close()
        capture.settle()
    }

    @Test func aFailedEnableIsOneLineAndNoCapture() throws {
        let log = LogLines()
        let (chip, capture) = try makeCapture(log: log.log)
        // Make a required write fail: buffer/length's folder is now a file.
        try FileManager.default.removeItem(atPath: tree.root + "/iio:device0/buffer")
        #expect(FileManager.default.createFile(atPath: tree.root + "/iio:device0/buffer", contents: Data()))
        let source = IIOBufferedSource(chip: chip, function: chip.functions[0], capture: capture)
        source.setRecording(true) { _ in }
        capture.settle()
        #expect(
            log.all.count == 1 && log.all[0].hasPrefix("<3>iio:device0 (bmi160): cannot start buffered capture:"), "\(log.all)")
        source.close()
        capture.settle()
    }
}
