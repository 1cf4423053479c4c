import Dispatch
import Foundation
import SensorKitModel
import SensorSystem
import SensorTestKit
import Synchronization
import Testing

@testable import IIOBridge

/// Polled streams on a temporary sysfs tree with a fake clock. The first read happens when
/// recording starts; the interval is an hour, so the test drives every further poll with
/// `pollNow()` after moving the clock and the attributes: every row's values and times are known.
@Suite(.serialized) struct IIOPolledSourceTests {
    let tree = FakeSysfsTree()
    static let second: Int64 = 1_000_000_000
    static let hour: Int64 = 3_600 * second

    func source(
        _ attributes: ChipFixtures.Attributes, kind: IIOSensorFunction.Kind, clock: any SystemClock,
        log: Journal = .discard, interval: Int64 = IIOPolledSourceTests.hour
    ) throws -> IIOPolledSource {
        let sysfs = tree.addDevice(0, attributes)
        let udev = UdevIIODevice(syspath: sysfs.directory.path, sysname: "iio:device0", devnode: nil, properties: [:])
        let chip = try IIOChip(udev: udev, description: try sysfs.describe())
        let function = try #require(chip.functions.first { $0.kind == kind && $0.capture == .polled })
        return IIOPolledSource(
            descriptor: chip.descriptor(for: function), sysfs: sysfs, reads: chip.columns(for: function).map(\.1),
            interval: interval, clock: clock, log: log)
    }

    func attribute(_ name: String) -> String? {
        (try? String(contentsOfFile: tree.root + "/iio:device0/" + name, encoding: .utf8))?.trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    /// Waits for the first read, which `setRecording(true)` queues.
    func firstPoll(_ source: IIOPolledSource) { source.settle() }

    @Test func stepsBecomePerIntervalDeltasWithTheirEnd() throws {
        let clock = FakeClock(boottime: 100 * Self.second)
        var attributes = ChipFixtures.bma400
        attributes["in_steps_en"] = "0"
        let steps = try source(attributes, kind: .stepCounter, clock: clock)
        #expect(steps.descriptor.sensor == .pedometerData && steps.descriptor.columns.map(\.name) == ["steps", "end"])
        let events = EventLog()
        steps.setRecording(true, deliver: events.deliver)
        steps.settle()
        #expect(attribute("in_steps_en") == "1", "the pedometer is enabled to count")
        firstPoll(steps)  // the baseline read (1532) produces no row

        clock.advance(seconds: 5)
        tree.set(0, "in_steps_input", "1540")
        steps.pollNow()
        clock.advance(seconds: 5)
        steps.pollNow()  // nobody walked
        clock.advance(seconds: 5)
        tree.set(0, "in_steps_input", "3")  // the chip was reset: count since the reset
        steps.pollNow()

        #expect(events.column(0) == [8, 0, 3])
        #expect(events.sensorTimes == [100, 105, 110].map { $0 * Self.second }, "a row starts where the interval starts")
        #expect(events.column(1) == [105, 110, 115].map { $0 * Self.second }, "and its end column is where it ends")
        #expect(events.batches.allSatisfy { $0.count == 1 }, "a slow poll hands over every row at once")
        steps.close()
        steps.settle()
        #expect(attribute("in_steps_en") == "0", "set back as it was")
    }

    @Test func lightInputsAreMillionthsStampedAtReadAndFailuresAreOneLineAndAGap() throws {
        let clock = FakeClock(boottime: 50 * Self.second)
        let log = LogLines()
        let light = try source(ChipFixtures.tsl2591, kind: .ambientLight, clock: clock, log: log.log)
        let events = EventLog()
        light.setRecording(true, deliver: events.deliver)
        firstPoll(light)
        #expect(events.column(0) == [123_456_000])
        #expect(events.sensorTimes == [50 * Self.second])

        // Garbage: one line, however many polls fail; the next good read closes a gap.
        tree.set(0, "in_illuminance_input", "n/a")
        clock.advance(seconds: 1)
        light.pollNow()
        clock.advance(seconds: 1)
        light.pollNow()
        #expect(log.all.filter { $0.contains("in_illuminance_input") }.count == 1, "\(log.all)")
        tree.set(0, "in_illuminance_input", "0.5")
        clock.advance(seconds: 1)
        light.pollNow()
        #expect(log.all.contains("<5>iio:device0: com.apple.SensorKit.als reads work again"), "\(log.all)")
        #expect(events.column(0) == [123_456_000, 500_000])
        #expect(events.gaps.count == 1)
        #expect(events.gaps.first.map { ($0.from, $0.to) } ?? (0, 0) == (50 * Self.second, 53 * Self.second))
        #expect(events.gaps.first?.why.hasPrefix("read failed: iio:device0: in_illuminance_input: 'n/a'") == true)

        // Stopped: no more polls deliver; a restart starts a fresh stream.
        light.setRecording(false) { _ in }
        light.pollNow()
        #expect(events.sensorTimes.count == 2)
        light.close()
        light.setRecording(true, deliver: events.deliver)
        light.settle()
        light.pollNow()
        #expect(events.sensorTimes.count == 2, "a closed source never records again")
    }

    @Test func pollingRunsOnTheSourcesOwnQueue() throws {
        let clock = FakeClock()
        let light = try source(ChipFixtures.tsl2591, kind: .ambientLight, clock: clock)
        let seen = EventLog()
        let key = DispatchSpecificKey<Int>()
        light.queue.setSpecific(key: key, value: 1)
        light.setRecording(true) { event in
            // Delivery happens right after the read, on the polling queue — not the caller's.
            #expect(DispatchQueue.getSpecific(key: key) == 1)
            seen.deliver(event)
        }
        firstPoll(light)
        #expect(seen.sensorTimes.count == 1)
        light.close()
        light.settle()
    }

    /// A boot clock that moves 1 ms each time it is read: the source reads it once per successful
    /// poll, so its stamps are exactly the samples read, however often the real timer fired.
    final class ReadStamps: SystemClock, Sendable {
        private let reads = Mutex<Int64>(0)
        static let start: Int64 = 7 * IIOPolledSourceTests.second
        var bootID: BootID { BootID("boot-0") }
        func boottimeNanoseconds() -> Int64 {
            reads.withLock {
                $0 += 1; return Self.start + $0 * 1_000_000
            }
        }
        func realtimeNanoseconds() -> Int64 { 0 }
        func wallClockSynchronized() -> Bool { true }
        /// Every stamp handed out so far.
        var issued: [Int64] { (0..<reads.withLock { $0 }).map { Self.start + ($0 + 1) * 1_000_000 } }
    }

    /// The recording pipeline queues its stop marker right after `setRecording(false)` returns
    /// and drops what arrives after it: a 10 Hz stream's held batch (up to a second) must be
    /// delivered before the call returns — here while a slow read still holds the source's queue.
    @Test func stoppingDeliversEverythingHeldBeforeItReturns() throws {
        let clock = ReadStamps()
        let light = try source(ChipFixtures.tsl2591, kind: .ambientLight, clock: clock, interval: 100_000_000)
        let events = EventLog()
        light.setRecording(true, deliver: events.deliver)
        light.settle()
        #expect(clock.issued.count >= 1 && events.sensorTimes.count < clock.issued.count, "a 10 Hz stream holds its samples")

        let slowRead = DispatchSemaphore(value: 0)
        light.queue.async { slowRead.wait() }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100)) { slowRead.signal() }
        light.setRecording(false) { _ in }
        let delivered = events.sensorTimes  // what reaches the pipeline before its stop marker
        #expect(delivered == clock.issued, "every sample read was delivered, none after the stop")
        light.settle()
        #expect(events.sensorTimes == delivered, "nothing is read or delivered once stopped")
        light.close()
    }

    /// A delivery runs on the source's queue; stopping from there (a consumer giving up) must not
    /// wait for that queue.
    @Test func stoppingFromADeliveryReturns() throws {
        let light = try source(ChipFixtures.tsl2591, kind: .ambientLight, clock: FakeClock())
        let events = EventLog()
        light.setRecording(true) { [light] event in
            events.deliver(event)
            light.setRecording(false) { _ in }
        }
        light.settle()
        light.pollNow()
        #expect(events.sensorTimes.count == 1, "stopped by its first delivery")
        light.close()
        light.settle()
    }
}
