import Foundation
import Glibc
import SensorKitModel
import SensorSystem
import Testing

@testable import SensorStore

/// What survives a SIGKILL and a damaged file.
@Suite struct CrashSafetyTests {
    /// `store-ingest-child` is built beside the test bundle (`.build/<config>/`).
    static var childPath: String {
        let bundle = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (bundle as NSString).deletingLastPathComponent + "/store-ingest-child"
    }

    @Test(.timeLimit(.minutes(3)))
    func aStoreKilledMidIngestKeepsAllButTheLastSecond() throws {
        let directory = NSTemporaryDirectory() + "sensorstore-crash-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(FileManager.default.isExecutableFile(atPath: Self.childPath), "build store-ingest-child first")

        let child = Process()
        child.executableURL = URL(fileURLWithPath: Self.childPath)
        child.arguments = [directory]
        let output = Pipe()
        child.standardOutput = output
        try child.run()
        // Let it ingest for about two and a half seconds (≈ 2500 samples), then kill it hard.
        var text = ""
        let started = Date()
        while Date().timeIntervalSince(started) < 20 {
            text += String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
            if let last = Self.lastCount(text), last >= 2_500 { break }
        }
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        #expect(child.terminationReason == .uncaughtSignal)
        text += String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let appended = try #require(Self.lastCount(text))
        let base = try #require(text.split(separator: "\n").first { $0.hasPrefix("base ") }.flatMap { Int64($0.dropFirst(5)) })

        // Reopen as the daemon would after a crash: same timeline file, same boot.
        let clock = LinuxSystemClock()
        var timeline = try #require(try TimelineFile.load(directory + "/" + TimelineFile.fileName))
        timeline.adoptCurrentBoot(of: clock)
        var configuration = StoreConfiguration(directory: directory)
        configuration.retention = RetentionPolicy(hold: 0, window: 7 * 24 * RetentionPolicy.hour)
        let restarting = try #require(timeline.srNanoseconds(of: clock.now()))
        let store = try SensorStore(configuration: configuration, clock: clock, timeline: timeline)
        defer { try? store.close() }
        let restarted = try store.now()
        let cursor = try store.samples(sensor: .accelerometer, device: "host", from: .min, to: .max)
        var survived: Int64 = 0
        var exact = true
        while let block = try cursor.next() {
            for i in 0..<block.count {
                let n = survived
                exact =
                    exact && block.bootInstant(at: i).nanoseconds == base + n * 1_000_000
                    && block.receiveBootInstant(at: i).nanoseconds == base + n * 1_000_000 + 500
                    && block.values(at: i) == [.integer(n), .integer(-n), .integer(3 * n)]
                survived += 1
            }
        }
        print("crash test: appended \(appended) samples before SIGKILL, \(survived) survived")
        #expect(exact, "the survivors are exactly the first samples appended")
        // The child appends 1000 samples per second; at most the last second (plus one batch) is lost.
        #expect(survived <= appended)
        #expect(survived >= appended - 1_010, "appended \(appended), survived \(survived)")
        // The loss is recorded: from the last committed sample to the restart, exactly.
        let anchor = try #require(timeline.anchors[clock.bootID])
        let lastSurvivor = anchor + base + (survived - 1) * 1_000_000
        let records = try store.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max)
        #expect(records.count == 1)
        #expect(records.first?.reason == .systemInitiated)
        #expect(records.first?.start == lastSurvivor + 1, "the record starts just after the last sample kept")
        let end = try #require(records.first?.end)
        #expect(end >= restarting && end <= restarted)
        #expect(store.crashLosses == records)
        print("crash test: \(Double(end - lastSurvivor) / 1e9) s lost and recorded")
    }

    static func lastCount(_ text: String) -> Int64? {
        text.split(separator: "\n").last { $0.hasPrefix("appended ") }.flatMap { Int64($0.dropFirst(9)) }
    }

    @Test func aChunkCorruptedOnDiskIsReportedAndNeverReturned() throws {
        let fixture = try StoreFixture {
            $0.retention = RetentionPolicy(hold: 0, window: 7 * StoreFixture.day)
            $0.chunkMaxSamples = 500
        }
        let stream = try fixture.opened.register(.accelerometer)
        let reference = referenceAccelerometer(seconds: 20)
        StoreTests.append(fixture, stream, times: reference.times, values: reference.axes)
        fixture.clock.advance(seconds: 10_000)
        try fixture.opened.close()

        // Pick the third chunk and flip one bit in the middle of its bytes, in the file itself.
        let db = try SQLiteDatabase(path: fixture.configuration.databasePath)
        let select = try db.prepare(
            "SELECT min_time, max_time, sample_count, bytes FROM chunks WHERE tier = 1 ORDER BY min_time LIMIT 1 OFFSET 2")
        #expect(try select.step())
        let (minTime, maxTime, count, blob) = (select.int64(0), select.int64(1), select.int(2), select.blob(3))
        let path = fixture.configuration.databasePath
        var file = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let probe = Array(blob[blob.count / 2..<blob.count / 2 + 32])
        let offset = try #require(Self.find(probe, in: file))
        file[offset + 3] ^= 0x10
        try Data(file).write(to: URL(fileURLWithPath: path))

        try fixture.reopen()
        let rows = try fixture.fetch()
        #expect(rows.count == reference.times.count - count)
        #expect(!rows.contains { $0.time >= minTime && $0.time <= maxTime })
        try fixture.opened.flush()  // the report travels through the writer queue
        let records = try fixture.opened.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max)
        #expect(records.map { [$0.start, $0.end] } == [[minTime, maxTime]])
        #expect(records.first?.reason == .systemInitiated)
        // Reported once: the chunk is gone, a second read finds the same data and no new record.
        #expect(try fixture.fetch() == rows)
        try fixture.opened.flush()
        #expect(try fixture.opened.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max).count == 1)
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if haystack[start..<start + needle.count].elementsEqual(needle) { return start }
        }
        return nil
    }
}
