import Foundation
import SensorChunks
import SensorKitModel
import Testing

@testable import SensorStore

/// The store end to end through its public API: appends, flushes, cursors, hold, window, purge,
/// budget, reopen.
@Suite struct StoreTests {
    /// The hold is 0 so freshly written data is visible.
    static func noHold(_ configuration: inout StoreConfiguration) {
        configuration.retention = RetentionPolicy(hold: 0, window: 7 * StoreFixture.day)
    }

    /// Appends rows as one batch; the expected result, in SR ns.
    @discardableResult
    static func append(
        _ fixture: StoreFixture, _ stream: StreamID, times: [Int64], values: [[Int64]], receiveDelay: Int64 = 1_000
    )
        -> [StoredRow]
    {
        let batch = SampleBatch(
            boot: fixture.clock.bootID, sensorTimes: times, receiveTimes: times.map { $0 &+ receiveDelay },
            columns: values.map { .integers($0) })
        fixture.opened.append(batch, to: stream)
        return times.indices.map { i in
            StoredRow(
                time: fixture.sr(times[i]), receive: fixture.sr(times[i] &+ receiveDelay),
                values: values.map { .integer($0[i]) })
        }
    }

    @Test func registeringTheSameDescriptorTwiceGivesTheSameStream() throws {
        let fixture = try StoreFixture()
        let a = try fixture.opened.register(.accelerometer)
        let b = try fixture.opened.register(.accelerometer)
        #expect(a == b)
        var other = StreamDescriptor.accelerometer
        other.source["chip"] = .string("lsm6dsl")
        #expect(try fixture.opened.register(other) != a)
        try fixture.reopen()
        #expect(try fixture.opened.register(.accelerometer) == a)
        #expect(fixture.opened.streams.count == 2)
        #expect(fixture.opened.descriptor(of: a) == .accelerometer)
    }

    @Test(arguments: [1 as UInt64, 2, 3])
    func randomBatchesRoundTripAcrossSealsAndReopen(seed: UInt64) throws {
        let fixture = try StoreFixture {
            Self.noHold(&$0)
            $0.chunkMaxSamples = 300
        }
        let stream = try fixture.opened.register(.accelerometer)
        var random = SeededGenerator(seed: seed)
        var expected: [StoredRow] = []
        var time: Int64 = 1_000_000_000
        for batchIndex in 0..<40 {
            let count = Int(random.next() % 120)  // includes empty batches
            var times: [Int64] = []
            var columns: [[Int64]] = [[], [], []]
            for _ in 0..<count {
                time += Int64(random.next() % 20_000_000)
                times.append(time)
                for c in 0..<3 {
                    let value: Int64 =
                        switch random.next() % 8 {
                        case 0: .min
                        case 1: .max
                        case 2: Int64(bitPattern: random.next())
                        default: Int64(random.gaussian() * 300)
                        }
                    columns[c].append(value)
                }
            }
            expected += Self.append(
                fixture, stream, times: times, values: columns, receiveDelay: Int64(random.next() % 5_000_000))
            if batchIndex % 7 == 3 { try fixture.opened.flush() }
        }
        fixture.clock.advance(nanoseconds: time)
        try fixture.opened.flush()
        #expect(try fixture.fetch() == expected)
        try fixture.reopen()
        #expect(try fixture.fetch() == expected)
    }

    @Test func duplicateAndOutOfOrderTimesComeBackInStableTimeOrder() throws {
        let fixture = try StoreFixture {
            Self.noHold(&$0)
            $0.chunkMaxSamples = 4  // overlapping chunks, merged by the cursor
        }
        let stream = try fixture.opened.register(.accelerometer)
        let times: [Int64] = [50, 10, 10, 30, 20, 10, 60, 30, 5, 50, 50]
        let values = [times.indices.map { Int64($0) }, times.map { $0 * 2 }, times.map { -$0 }]
        let rows = Self.append(fixture, stream, times: times, values: values)
        fixture.clock.advance(seconds: 1)
        try fixture.opened.flush()
        // Stable: equal times keep their append order.
        let expected = rows.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
        #expect(try fixture.fetch() == expected)
        try fixture.reopen()
        #expect(try fixture.fetch() == expected)
    }

    @Test func floatColumnsKeepNaNPayloadsAndSignedZeros() throws {
        let fixture = try StoreFixture(Self.noHold)
        let schema = SampleSchema([.float(name: "lux", unit: "lx"), .integer(name: "raw", scale: 1, offset: 0, unit: "")])
        let stream = try fixture.opened.register(StreamDescriptor(sensor: .ambientLightSensor, schema: schema))
        let floats: [Double] = [
            .nan, -.nan, Double(nan: 0x1234, signaling: false), Double(nan: 7, signaling: true), 0, -0.0,
            .infinity, -.infinity, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 1.5, 312.25,
        ]
        let times = floats.indices.map { 1_000 + Int64($0) * 1_000_000 }
        let batch = SampleBatch(
            boot: fixture.clock.bootID, sensorTimes: times, receiveTimes: times,
            columns: [.floats(floats), .integers(floats.indices.map { Int64($0) })])
        fixture.opened.append(batch, to: stream)
        fixture.clock.advance(seconds: 1)
        try fixture.opened.flush()
        let cursor = try fixture.opened.samples(sensor: .ambientLightSensor, device: "host", from: .min, to: .max)
        var got: [UInt64] = []
        while let block = try cursor.next() {
            guard case .floats(let values) = block.column(0) else { Issue.record("not floats"); return }
            got += values.map(\.bitPattern)
        }
        #expect(got == floats.map(\.bitPattern))
    }

    @Test func floatColumnsNamesAStreamsFloatColumnsAndNothingForOneWithout() throws {
        let fixture = try StoreFixture(Self.noHold)
        let schema = SampleSchema([.integer(name: "raw", scale: 1, offset: 0, unit: ""), .float(name: "lux", unit: "lx")])
        let light = try fixture.opened.register(StreamDescriptor(sensor: .ambientLightSensor, schema: schema))
        let motion = try fixture.opened.register(.accelerometer)
        #expect(fixture.opened.floatColumns(of: light) == [false, true])
        #expect(fixture.opened.floatColumns(of: motion) == nil)
        #expect(fixture.opened.floatColumns(of: StreamID(rawValue: 999)) == nil)
    }

    @Test func rangesAreExclusiveBelowAndInclusiveAboveToTheNanosecond() throws {
        let fixture = try StoreFixture(Self.noHold)
        let stream = try fixture.opened.register(.accelerometer)
        let times: [Int64] = (0..<100).map { 1_000_000_000 + $0 * 10_000_000 + ($0 % 3) }
        Self.append(fixture, stream, times: times, values: [times, times, times])
        fixture.clock.advance(seconds: 10)
        try fixture.opened.flush()
        for (low, high) in [(10, 20), (0, 99), (42, 42), (5, 6)] {
            let from = fixture.sr(times[low]), to = fixture.sr(times[high])
            let got = try fixture.fetch(from: from, to: to).map(\.time)
            #expect(got == times[(low + 1)..<(high + 1)].map { fixture.sr($0) }, "(\(low), \(high)]")
            // One nanosecond either way moves exactly one sample in or out.
            #expect(try fixture.fetch(from: from - 1, to: to).count == high - low + 1)
            #expect(try fixture.fetch(from: from, to: to - 1).count == max(0, high - low - 1))
        }
        #expect(try fixture.fetch(from: fixture.sr(times[50]), to: fixture.sr(times[10])).isEmpty)
        // notBefore is inclusive.
        let notBefore = fixture.sr(times[30])
        #expect(try fixture.fetch(notBefore: notBefore).first?.time == notBefore)
        #expect(try fixture.fetch(notBefore: notBefore + 1).first?.time == fixture.sr(times[31]))
    }

    @Test func aRangeReachingIntoTheHoldReturnsNothing() throws {
        let fixture = try StoreFixture()  // SensorKit defaults: 24 h hold
        let stream = try fixture.opened.register(.accelerometer)
        let times: [Int64] = (0..<10).map { 1_000_000_000 + $0 * 1_000_000_000 }
        Self.append(fixture, stream, times: times, values: [times, times, times])
        try fixture.opened.flush()
        fixture.clock.advance(nanoseconds: StoreFixture.day + 20_000_000_000)
        let holdStart = try fixture.opened.now() - StoreFixture.day
        #expect(try fixture.fetch(from: .min, to: holdStart).count == 10)
        #expect(try fixture.fetch(from: .min, to: holdStart + 1).isEmpty)
        #expect(try fixture.fetch(from: fixture.sr(times[4]), to: holdStart).count == 5)
        // Deletion records follow the same rule.
        fixture.opened.recordGap(
            sensor: .accelerometer, device: "host", from: fixture.sr(0), to: fixture.sr(1),
            reason: .noInterestedClients)
        try fixture.opened.flush()
        #expect(try fixture.opened.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: holdStart).count == 1)
        #expect(try fixture.opened.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: holdStart + 1).isEmpty)
    }

    /// The window comes from the configuration file and may be up to `Int64.max` ns: the purge's
    /// "two windows" for deletion records overflowed and trapped. It saturates; nothing is purged.
    @Test func aWindowOfInt64MaxPurgesWithoutTrapping() throws {
        let fixture = try StoreFixture { $0.retention = RetentionPolicy(hold: .max, window: .max) }
        let stream = try fixture.opened.register(.accelerometer)
        Self.append(fixture, stream, times: [1_000_000_000], values: [[1], [2], [3]])
        let report = try fixture.opened.purge()
        #expect(report.purgedChunks == 0 && report.purgedSamples == 0)
        #expect(try fixture.fetch(to: .max).isEmpty, "a hold of Int64.max hides everything")
    }

    @Test func dataBeyondTheWindowIsHiddenThenPurgedAsAgeLimit() throws {
        let fixture = try StoreFixture {
            $0.retention = RetentionPolicy(hold: StoreFixture.hour, window: StoreFixture.day)
            $0.chunkMaxDuration = 3_600_000_000_000
        }
        let stream = try fixture.opened.register(.accelerometer)
        // Three hours of one sample a minute, each hour sealed as its own chunk.
        var all: [Int64] = []
        for hour in 0..<3 {
            let times = (0..<60).map { Int64(hour) * StoreFixture.hour + Int64($0) * 60_000_000_000 + 1_000_000_000 }
            Self.append(fixture, stream, times: times, values: [times, times, times])
            all += times
            try fixture.reopen()  // close seals the open chunk
        }
        // Now: 1 day and 90 minutes after the first sample → the first hour and a half left the window.
        fixture.clock.advance(nanoseconds: StoreFixture.day + 90 * 60_000_000_000)
        let windowStart = try fixture.opened.now() - StoreFixture.day
        let visible = try fixture.fetch(to: try fixture.opened.now() - StoreFixture.hour).map(\.time)
        #expect(visible == all.map { fixture.sr($0) }.filter { $0 > windowStart })
        let report = try fixture.opened.purge()
        #expect(report.purgedChunks == 1)  // only whole chunks: the first hour
        #expect(report.purgedSamples == 60)
        let records = try fixture.opened.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: windowStart)
        #expect(records.map(\.reason) == [.ageLimit])
        #expect(records.first?.start == fixture.sr(all[0]))
        #expect(records.first?.end == fixture.sr(all[59]))
        #expect(records.first?.record.reason == .ageLimit)
        // Still served exactly as before the purge.
        #expect(try fixture.fetch(to: try fixture.opened.now() - StoreFixture.hour).map(\.time) == visible)
    }

    @Test func diskBudgetEvictsOldestChunksAsLowDiskSpace() throws {
        let fixture = try StoreFixture {
            Self.noHold(&$0)
            $0.chunkMaxSamples = 1_000
            $0.maxBytes = 400_000
        }
        let stream = try fixture.opened.register(.accelerometer)
        var random = SeededGenerator(seed: 9)
        // Incompressible values: ~24 B per sample, 40 chunks ≈ 1 MB.
        let times = (0..<40_000).map { 1_000_000_000 + Int64($0) * 10_000_000 }
        let noise = (0..<3).map { _ in times.map { _ in Int64(bitPattern: random.next()) } }
        Self.append(fixture, stream, times: times, values: noise)
        fixture.clock.advance(nanoseconds: 400_000_000_000)
        // The budget is kept before every commit, not only at a purge.
        try fixture.opened.flush()
        #expect(try fixture.opened.diskUsage().storeBytes <= 400_000)
        try fixture.opened.purge()
        #expect(try fixture.opened.diskUsage().storeBytes <= 400_000)
        let left = try fixture.fetch()
        #expect(!left.isEmpty && left.count < 40_000)
        // The newest data survived, the oldest went.
        #expect(left.last?.time == fixture.sr(times.last!))
        let records = try fixture.opened.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max)
        #expect(!records.isEmpty && records.allSatisfy { $0.reason == .lowDiskSpace })
        #expect(records.map(\.start).min() == fixture.sr(times[0]))
        #expect(records.map(\.end).max()! < left.first!.time)
    }

    @Test func gapsReportedByThePipelineAreDeletionRecords() throws {
        let fixture = try StoreFixture(Self.noHold)
        let boot = fixture.clock.bootID
        fixture.opened.recordGap(
            sensor: .accelerometer, device: "host", from: fixture.sr(100), to: fixture.sr(200),
            reason: .systemInitiated)
        try fixture.opened.recordGap(
            sensor: .accelerometer, device: "host", from: BootInstant(boot: boot, nanoseconds: 300),
            to: BootInstant(boot: boot, nanoseconds: 400), reason: .noInterestedClients)
        fixture.opened.recordGap(
            sensor: .rotationRate, device: "host", from: fixture.sr(100), to: fixture.sr(200),
            reason: .systemInitiated)
        try fixture.opened.flush()
        func reasons(_ from: Int64, _ to: Int64) throws -> [SRDeletionReason] {
            try fixture.opened.deletionRecords(sensor: .accelerometer, device: "host", from: fixture.sr(from), to: fixture.sr(to))
                .map(\.reason)
        }
        #expect(try reasons(0, 1_000) == [.systemInitiated, .noInterestedClients])
        // (from, to] overlap, to the nanosecond.
        #expect(try reasons(200, 299) == [])
        #expect(try reasons(199, 299) == [.systemInitiated])
        #expect(try reasons(200, 300) == [.noInterestedClients])
        #expect(
            try fixture.opened.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max).first?.start
                == fixture.sr(100))
    }

    @Test func appsConsentAndStakesPersist() throws {
        let fixture = try StoreFixture()
        try fixture.opened.registerApp("org.example.study")
        try fixture.opened.setConsent(bundleID: "org.example.study", sensor: .accelerometer, status: .authorized, decidedAt: 5)
        try fixture.opened.setConsent(bundleID: "org.example.study", sensor: .accelerometer, status: .denied, decidedAt: 6)
        try fixture.opened.setConsent(bundleID: "org.example.other", sensor: .heartRate, status: .notDetermined, decidedAt: 7)
        try fixture.opened.setStake(bundleID: "org.example.study", sensor: .accelerometer, active: true, at: 100)
        try fixture.opened.setStake(bundleID: "org.example.study", sensor: .accelerometer, active: false, at: 200)
        try fixture.opened.setStake(bundleID: "org.example.study", sensor: .accelerometer, active: true, at: 300)
        try fixture.opened.setStake(bundleID: "org.example.other", sensor: .heartRate, active: false, at: 50)
        try fixture.reopen()
        #expect(try fixture.opened.apps() == ["org.example.other", "org.example.study"])
        #expect(
            try fixture.opened.consents(bundleID: "org.example.study") == [
                ConsentRecord(bundleID: "org.example.study", sensor: .accelerometer, status: .denied, decidedAt: 6)
            ])
        #expect(try fixture.opened.consents().count == 2)
        #expect(
            try fixture.opened.stakes(sensor: .accelerometer) == [
                StakeRecord(bundleID: "org.example.study", sensor: .accelerometer, firstStart: 100, active: true)
            ])
        #expect(try fixture.opened.sensorsWithActiveStakes() == [.accelerometer])
    }

    @Test func samplesFromAnotherBootKeepTheirBootClock() throws {
        let fixture = try StoreFixture(Self.noHold)
        let stream = try fixture.opened.register(.accelerometer)
        let first = fixture.clock.bootID
        Self.append(fixture, stream, times: [1_000, 2_000], values: [[1, 2], [1, 2], [1, 2]])
        try fixture.opened.close()
        fixture.clock.reboot()
        var timeline = fixture.timeline
        timeline.adoptCurrentBoot(of: fixture.clock)
        let store = try SensorStore(configuration: fixture.configuration, clock: fixture.clock, timeline: timeline)
        defer { try? store.close() }
        let batch = SampleBatch(
            boot: fixture.clock.bootID, sensorTimes: [500], receiveTimes: [600],
            columns: [.integers([3]), .integers([3]), .integers([3])])
        store.append(batch, to: stream)
        fixture.clock.advance(seconds: 1)
        try store.flush()
        let cursor = try store.samples(sensor: .accelerometer, device: "host", from: .min, to: .max)
        var instants: [BootInstant] = []
        var receives: [BootInstant] = []
        while let block = try cursor.next() {
            for i in 0..<block.count {
                instants.append(block.bootInstant(at: i))
                receives.append(block.receiveBootInstant(at: i))
            }
        }
        #expect(
            instants == [
                BootInstant(boot: first, nanoseconds: 1_000), BootInstant(boot: first, nanoseconds: 2_000),
                BootInstant(boot: fixture.clock.bootID, nanoseconds: 500),
            ])
        #expect(receives.last == BootInstant(boot: fixture.clock.bootID, nanoseconds: 600))
    }

    @Test func appendingFromAnUnknownBootIsReportedNotStored() throws {
        let fixture = try StoreFixture(Self.noHold)
        let stream = try fixture.opened.register(.accelerometer)
        let batch = SampleBatch(
            boot: BootID("never-adopted"), sensorTimes: [1], receiveTimes: [1],
            columns: [.integers([1]), .integers([1]), .integers([1])])
        fixture.opened.append(batch, to: stream)
        #expect(throws: StoreError.unknownBoot(BootID("never-adopted"))) { try fixture.opened.flush() }
        try fixture.opened.flush()  // reported once
        #expect(try fixture.fetch().isEmpty)
    }

    @Test func tooLittleFreeSpaceEvictsAndHandsPagesBack() throws {
        let fixture = try StoreFixture {
            Self.noHold(&$0)
            $0.chunkMaxSamples = 1_000
            $0.minFreeBytes = .max / 2  // never satisfiable: everything sealed must go
        }
        let stream = try fixture.opened.register(.accelerometer)
        let times = (0..<5_000).map { 1_000_000_000 + Int64($0) * 10_000_000 }
        Self.append(fixture, stream, times: times, values: [times, times, times])
        fixture.clock.advance(nanoseconds: 100_000_000_000)
        // The budget is kept before every commit: the flush evicts all five sealed chunks.
        try fixture.opened.flush()
        #expect(try fixture.opened.purge() == PurgeReport())
        #expect(try fixture.fetch().isEmpty)
        let records = try fixture.opened.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max)
        #expect(!records.isEmpty && records.allSatisfy { $0.reason == .lowDiskSpace })
        #expect(records.map(\.start).min() == fixture.sr(times[0]))
        #expect(records.map(\.end).max() == fixture.sr(times.last!))
    }

    /// A burst of several chunks' worth in one drain (a writer that fell behind) is cut into
    /// full chunks counted from the open chunk's first sample, the pieces already committed for
    /// that chunk are replaced exactly once, and the remainder stays open.
    @Test func aBurstSealsFullChunksFromTheOpenChunksStart() throws {
        let fixture = try StoreFixture {
            Self.noHold(&$0)
            $0.chunkMaxSamples = 100
        }
        let stream = try fixture.opened.register(.accelerometer)
        func batch(_ range: Range<Int>) -> (times: [Int64], values: [[Int64]]) {
            let times = range.map { 1_000_000_000 + Int64($0) * 10_000_000 }
            return (times, (0..<3).map { axis in range.map { Int64($0 * (axis + 1) % 977) } })
        }
        let first = batch(0..<30)
        var expected = Self.append(fixture, stream, times: first.times, values: first.values)
        try fixture.opened.flush()  // the first 30 samples are a committed piece
        let burst = batch(30..<380)
        expected += Self.append(fixture, stream, times: burst.times, values: burst.values)
        try fixture.opened.flush()

        func chunkRows() throws -> [[Int64]] {
            let db = try SQLiteDatabase(path: fixture.configuration.databasePath)
            let select = try db.prepare("SELECT tier, sample_count, min_time FROM chunks ORDER BY min_time, tier")
            var rows: [[Int64]] = []
            while try select.step() { rows.append([select.int64(0), select.int64(1), select.int64(2)]) }
            return rows
        }
        #expect(
            try chunkRows() == [
                [1, 100, fixture.sr(first.times[0])], [1, 100, fixture.sr(burst.times[70])],
                [1, 100, fixture.sr(burst.times[170])], [0, 80, fixture.sr(burst.times[270])],
            ])
        fixture.clock.advance(seconds: 10)
        #expect(try fixture.fetch() == expected)
        try fixture.reopen()
        #expect(try fixture.fetch() == expected)
    }

    @Test func aDatabaseFromANewerBuildIsRefused() throws {
        let fixture = try StoreFixture()
        try fixture.opened.close()
        let db = try SQLiteDatabase(path: fixture.configuration.databasePath)
        #expect(try db.scalar("SELECT version FROM schema_version") == CatalogSchema.currentVersion)
        try db.execute("UPDATE schema_version SET version = 99")
        #expect(throws: StoreError.newerSchema(found: 99, supported: CatalogSchema.currentVersion)) {
            _ = try SensorStore(configuration: fixture.configuration, clock: fixture.clock, timeline: fixture.timeline)
        }
    }
}

/// The append inbox stages batches per stream: interleaved appends of several streams, each
/// many small batches, come back complete, each sample with its own stream's values, in order.
/// (Batches refused beyond the backlog limit are StoreUpgradeTests'.)
@Suite struct AppendStagingTests {
    @Test func interleavedStreamsKeepEveryBatchInOrder() throws {
        let fixture = try StoreFixture {
            StoreTests.noHold(&$0)
            $0.chunkMaxSamples = 250
        }
        var other = StreamDescriptor.accelerometer
        other.source["chip"] = .string("second")
        let streams = [try fixture.opened.register(.accelerometer), try fixture.opened.register(other)]
        var expected: [StoredRow] = []
        var random = SeededGenerator(seed: 11)
        for round in 0..<400 {
            for (which, stream) in streams.enumerated() {
                let count = Int(random.next() % 6)  // includes empty batches
                // Odd nanoseconds for one stream, even for the other: no ties between them.
                let times = (0..<count).map { Int64(1_000_000_000 + round * 100_000 + $0 * 10_000) * 2 + Int64(which) }
                expected += StoreTests.append(
                    fixture, stream, times: times,
                    values: [times.map { $0 % 1000 }, times.map { _ in Int64(which) }, times.map { _ in 7 }])
            }
            if round % 97 == 0 { try fixture.opened.flush() }
        }
        fixture.clock.advance(seconds: 10_000)
        try fixture.opened.flush()
        #expect(try fixture.fetch() == expected.sorted { $0.time < $1.time })
    }

    /// Batches larger than a staging segment, of two interleaved streams, are staged across
    /// several segments and come back complete and in order; a run of segments is cut into
    /// chunks as one batch would be: its time span is checked once, at the run's end.
    @Test func batchesLargerThanASegmentStayOneRun() throws {
        let fixture = try StoreFixture {
            StoreTests.noHold(&$0)
            $0.chunkMaxDuration = 1_000_000_000  // 100 samples at 100 Hz
        }
        var other = StreamDescriptor.accelerometer
        other.source["chip"] = .string("second")
        let streams = [try fixture.opened.register(.accelerometer), try fixture.opened.register(other)]
        // One batch per stream (an append is staged at once, whenever a drain comes), each
        // filling two segments and part of a third.
        let count = 2 * AppendInbox.segmentSamples + 300
        var expected: [StoredRow] = []
        for (which, stream) in streams.enumerated() {
            // Odd nanoseconds for one stream, even for the other: no ties between them.
            let times = (0..<count).map { Int64(1_000_000_000 + $0 * 10_000_000) + Int64(which) }
            expected += StoreTests.append(
                fixture, stream, times: times,
                values: [times.map { $0 % 1000 }, times.map { _ in Int64(which) }, times.map { $0 % 3 }])
        }
        try fixture.opened.flush()
        let db = try SQLiteDatabase(path: fixture.configuration.databasePath)
        let select = try db.prepare("SELECT stream, tier, sample_count FROM chunks ORDER BY stream, min_time")
        var rows: [[Int64]] = []
        while try select.step() { rows.append([select.int64(0), select.int64(1), select.int64(2)]) }
        #expect(rows == streams.map { [$0.rawValue, 1, Int64(count)] })
        fixture.clock.advance(seconds: 10_000)
        #expect(try fixture.fetch() == expected.sorted { $0.time < $1.time })
    }
}

/// The open chunk's time bounds (the chunk index's min_time/max_time, which queries select
/// chunks by) equal a plain min/max over its times after every append: rising batches take a
/// shortcut, so batches that fall anywhere, repeat, and wrap around Int64 must not.
@Suite struct OpenChunkBoundsTests {
    @Test func boundsMatchAPlainScanForEveryShapeOfBatch() {
        var random = SeededGenerator(seed: 31)
        let shapes: [[Int64]] = [
            [5], [5, 5, 5], [1, 2, 3, 10], [3, 2, 1], [1, 9, 2, 10], [10, 20, 30, 29],
            [.max - 1, .max], [.max, .min], [.min, .max], [.min, .min + 1, -1, 0, 1, .max],
            [0, .max, .min, 0], [Int64.max - 5, Int64.max - 2, Int64.min + 3],
        ]
        for shift: Int64 in [0, 1_000, -7, .max / 2] {
            var chunk = OpenChunk(stream: StreamID(rawValue: 1), roles: [.integer], bootRow: 1)
            var batches = shapes
            for _ in 0..<30 {
                let start = Int64(bitPattern: random.next())
                batches.append((0..<Int(1 + random.next() % 40)).map { _ in start &+ Int64(random.next() % 1_000) &- 10 })
            }
            for times in batches {
                let batch = ChunkSamples(times: times, receiveTimes: times, columns: [times])
                chunk.append(batch, shift: shift)
                #expect(
                    chunk.minTime == chunk.samples.times.min() && chunk.maxTime == chunk.samples.times.max(),
                    "shift \(shift), batch \(times)")
            }
        }
    }
}
