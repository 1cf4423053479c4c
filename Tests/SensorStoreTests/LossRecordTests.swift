import Foundation
import Glibc
import SensorKitModel
import SensorTestKit
import Synchronization
import Testing

@testable import SensorStore

/// Loss is never silent: a run ended by a power cut, and samples a full disk could not take,
/// leave deletion records that cover them (docs/store.md, crash contract and disk budget).
@Suite struct LossRecordTests {
    static let second: Int64 = 1_000_000_000

    /// A crash image of a running store: its database and WAL as a power cut would leave them
    /// after the last commit (the WAL index is rebuilt at open).
    static func crashImage(of fixture: StoreFixture) throws -> String {
        let copy = NSTemporaryDirectory() + "sensorstore-powercut-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(
                atPath: fixture.configuration.databasePath + suffix,
                toPath: copy + "/store.sqlite" + suffix)
        }
        return copy
    }

    @Test func aPowerCutIsRecordedFromTheLastCommittedSampleAcrossTheReboot() throws {
        let fixture = try StoreFixture(StoreTests.noHold)
        let recording = try fixture.opened.register(.accelerometer)
        var other = StreamDescriptor.accelerometer
        other.sensor = .rotationRate
        let stopped = try fixture.opened.register(other)
        let start = fixture.boottime
        let times = (0..<500).map { start + Int64($0) * 10_000_000 }
        StoreTests.append(fixture, recording, times: times, values: [times, times, times])
        StoreTests.append(fixture, stopped, times: times, values: [times, times, times])
        fixture.opened.recordingStopped(stopped)  // nobody wants it any more: no loss to record
        fixture.clock.advance(seconds: 6)
        try fixture.opened.flush()
        let copy = try Self.crashImage(of: fixture)
        defer { try? FileManager.default.removeItem(atPath: copy) }
        let lastCommitted = fixture.sr(times.last!)
        // The original store closes cleanly: its next open records nothing.
        try fixture.reopen()
        #expect(try fixture.opened.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max).isEmpty)

        // The power goes; the machine comes back a minute later in a new boot.
        fixture.clock.reboot(downtime: 60 * Self.second, bootedFor: 3 * Self.second)
        var timeline = fixture.timeline
        timeline.adoptCurrentBoot(of: fixture.clock)
        var configuration = fixture.configuration
        configuration.directory = copy
        let store = try SensorStore(configuration: configuration, clock: fixture.clock, timeline: timeline)
        defer { try? store.close() }
        let restart = try #require(timeline.srNanoseconds(of: fixture.clock.now()))
        let records = try store.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max)
        #expect(records.map { [$0.start, $0.end] } == [[lastCommitted + 1, restart]])
        #expect(records.first?.reason == .systemInitiated)
        #expect(restart - lastCommitted > 60 * Self.second, "the span crosses the reboot on the SR timeline")
        #expect(try store.deletionRecords(sensor: .rotationRate, device: "host", from: .min, to: .max).isEmpty)
        // Recorded once: the next open (after a clean close) finds no open run.
        try store.close()
        let again = try SensorStore(configuration: configuration, clock: fixture.clock, timeline: timeline)
        #expect(try again.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max).count == 1)
        try again.close()
    }
}

/// An 8 MiB tmpfs, mounted for one test and unmounted after it (needs root; CI runs as root).
final class SmallFileSystem {
    let path: String

    init(megabytes: Int = 8) throws {
        var template = Array("/tmp/sensorstore-tmpfs-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemFailure("mkdtemp") }
        path = String(cString: made)
        try Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", path])
    }

    deinit {
        try? Self.run("/bin/umount", ["-l", path])
        rmdir(path)
    }

    var availableBytes: Int64 {
        var fs = statvfs()
        guard statvfs(path, &fs) == 0 else { return -1 }
        return Int64(fs.f_bavail) * Int64(fs.f_frsize)
    }

    /// Takes every free byte with a file of its own (another program filling the disk).
    func fill() -> String {
        let hog = path + "/hog"
        // Close-on-exec: a child another test spawns meanwhile would otherwise keep the hog open,
        // and unlinking it would then free nothing.
        let fd = open(hog, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        let block = [UInt8](repeating: 0xA5, count: 4096)
        while block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        close(fd)
        return hog
    }

    struct SystemFailure: Error { let what: String; init(_ what: String) { self.what = what } }

    static func run(_ tool: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw SystemFailure("\(tool) \(arguments)") }
    }
}

@Suite(.serialized, .needs(.root("mounting a tmpfs")), .needs(.tools([("/bin/mount", "mount")])))
struct DiskFullTests {
    /// A store on the small file system with a fake clock that moves only when told.
    final class Rig {
        let disk: SmallFileSystem
        let clock = FakeClock()
        let timeline: Timeline
        let store: SensorStore
        let stream: StreamID
        var random = SeededGenerator(seed: 12)
        /// Every appended sample's SR time.
        var appended: [Int64] = []
        /// What the store told its owner about losses.
        let losses = LossEvents()

        deinit { try? store.close() }

        init(_ adjust: (inout StoreConfiguration) -> Void) throws {
            disk = try SmallFileSystem()
            var timeline = Timeline.founded(by: clock)
            timeline.adoptCurrentBoot(of: clock)
            self.timeline = timeline
            var configuration = StoreConfiguration(directory: disk.path + "/state")
            StoreTests.noHold(&configuration)
            configuration.durability = .processCrash
            configuration.commitInterval = 3600  // commits come from flush()
            configuration.purgeInterval = 0
            adjust(&configuration)
            let losses = self.losses
            store = try SensorStore(
                configuration: configuration, clock: clock, timeline: timeline,
                onLoss: losses.append)
            stream = try store.register(.accelerometer)
        }

        /// One second of `rate` samples of noise (about 6 bytes each, sealed), then a flush;
        /// returns the flush's failure, nil when it succeeded.
        @discardableResult
        func second(rate: Int) -> String? {
            let start = clock.boottimeNanoseconds()
            let times = (0..<rate).map { start + Int64($0) * (1_000_000_000 / Int64(rate)) }
            let noise = (0..<3).map { _ in times.map { _ in Int64(random.next() % 65_536) - 32_768 } }
            store.append(
                SampleBatch(
                    boot: clock.bootID, sensorTimes: times, receiveTimes: times,
                    columns: noise.map { .integers($0) }), to: stream)
            appended += times.map { timeline.srNanoseconds(of: BootInstant(boot: clock.bootID, nanoseconds: $0))! }
            clock.advance(seconds: 1)
            do {
                try store.flush()
                return nil
            } catch {
                return "\(error)"
            }
        }

        /// Appended samples that are neither stored nor inside a `lowDiskSpace` record.
        func unexplained() throws -> (stored: Int, covered: Int, unexplained: [Int64]) {
            let (stored, covered, unexplained, _) = try accounting()
            return (stored, covered, unexplained)
        }

        /// `unexplained()`, and the stored samples a `lowDiskSpace` record claims were deleted.
        func accounting() throws -> (stored: Int, covered: Int, unexplained: [Int64], claimedButStored: Int) {
            let cursor = try store.samples(sensor: .accelerometer, device: "host", from: .min, to: .max)
            var stored = Set<Int64>()
            while let block = try cursor.next() {
                for index in 0..<block.count { stored.insert(block.sensorTime(at: index)) }
            }
            let records = try store.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max)
                .filter { $0.reason == .lowDiskSpace }
            var covered = 0
            var unexplained: [Int64] = []
            for time in appended where !stored.contains(time) {
                if records.contains(where: { $0.start <= time && time <= $0.end }) {
                    covered += 1
                } else {
                    unexplained.append(time)
                }
            }
            let claimed = stored.filter { time in records.contains { $0.start <= time && time <= $0.end } }.count
            return (stored.count, covered, unexplained, claimed)
        }
    }

    /// Recording at a high rate onto 8 MiB with min-free 2 MiB: the budget counts the WAL and
    /// the open chunk (here never sealed by size: its pieces hold everything until pressure
    /// seals them), keeps min-free at every commit, and every sample it could not keep is inside
    /// a `lowDiskSpace` record.
    @Test(.timeLimit(.minutes(3)))
    func theBudgetKeepsMinFreeAndRecordsEverySampleItLetsGo() throws {
        let minFree: Int64 = 2 << 20
        let rig = try Rig {
            $0.minFreeBytes = minFree
            $0.chunkMaxSamples = 10_000_000
        }
        var lowest = Int64.max
        var failures: [String] = []
        for _ in 0..<200 {
            if let failure = rig.second(rate: 5_000) { failures.append(failure) }
            lowest = min(lowest, rig.disk.availableBytes)
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        let (stored, covered, unexplained, claimed) = try rig.accounting()
        #expect(claimed == 0, "a lowDiskSpace record claims \(claimed) stored samples were deleted")
        print(
            "disk full test: \(rig.appended.count) appended, \(stored) stored, \(covered) in lowDiskSpace records, \(unexplained.count) unexplained, lowest free \(lowest) B"
        )
        let unexplainedCount = unexplained.count
        #expect(unexplainedCount == 0, "samples lost without a record")
        #expect(covered > 0, "the disk was meant to fill")
        #expect(stored > 0)
        #expect(lowest >= minFree - (256 << 10), "free space fell to \(lowest) B")
    }

    /// Another program takes every free byte: the samples that cannot be written are recorded as
    /// `lowDiskSpace` once the space is back, and the store records again.
    @Test(.timeLimit(.minutes(3)))
    func samplesLostWhileAnotherProgramFillsTheDiskAreRecordedWhenSpaceReturns() throws {
        let rig = try Rig { _ in }
        for _ in 0..<5 {
            let failure = rig.second(rate: 1_000)
            #expect(failure == nil)
        }
        let before = rig.appended
        let hog = rig.disk.fill()
        for _ in 0..<5 { rig.second(rate: 1_000) }
        let during = rig.appended.dropFirst(before.count)
        unlink(hog)
        for _ in 0..<5 { rig.second(rate: 1_000) }
        let failure = rig.second(rate: 1_000)
        #expect(failure == nil, "the store records again once space returns")
        let after = rig.appended.dropFirst(before.count + during.count)
        let (stored, covered, unexplained, claimed) = try rig.accounting()
        #expect(claimed == 0, "a lowDiskSpace record claims \(claimed) stored samples were deleted")
        print(
            "disk full test (hog): \(rig.appended.count) appended, \(stored) stored, \(covered) in lowDiskSpace records, \(unexplained.count) unexplained"
        )
        let unexplainedCount = unexplained.count
        #expect(unexplainedCount == 0, "samples lost without a record")
        #expect(covered > 0)
        let cursor = try rig.store.samples(sensor: .accelerometer, device: "host", from: .min, to: .max)
        var times = Set<Int64>()
        while let block = try cursor.next() { for i in 0..<block.count { times.insert(block.sensorTime(at: i)) } }
        let kept = before.allSatisfy(times.contains)
        #expect(kept, "what was committed before the disk filled stays")
        let resumed = after.filter(times.contains).count
        #expect(resumed >= after.count - 1_000, "recording resumed")
        // The owner heard the loss start and end, once each way.
        let events = rig.losses.all
        #expect(events.first.map { if case .losing = $0 { true } else { false } } == true, "\(events)")
        #expect(events.last == .recovered && events.filter { $0 == .recovered }.count == 1, "\(events)")
    }
}
