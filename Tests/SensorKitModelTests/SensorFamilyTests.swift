import Foundation
import SensorKitModel
import Testing

/// The family registry: one family per layout, wire columns as docs/protocol.md §5.2 pins them,
/// stored names as existing stores hold them, and each family's conversion on fixed inputs.
@Suite struct SensorFamilyTests {
    /// docs/protocol.md §5.2, column by column: a change here is a protocol change.
    static let protocolColumns: [BatchLayout: [String]] = [
        .motion: ["x", "y", "z"],
        .pressure: ["pressure", "temperature"],
        .ambientLight: ["lux", "chromaticityX", "chromaticityY", "placement"],
        .pedometer: ["endTime", "steps"],
        .heartRate: ["bpm", "confidence", "rrCount"],
        .wrist: ["onWrist", "wristLocation", "crownOrientation"],
        .electrocardiogram: ["microvolts", "lead", "flags", "frequency", "sessionStart"],
        .photoplethysmogram: (0..<20).map { "ppg\($0)" } + ["ambient", "status"],
        .deletionRecords: ["endTime", "reason"],
        .keyboardMetrics: ["duration", "taps", "deletes", "words", "episodes", "pauses", "typingDuration", "typingSpeed"],
        .deviceUsage: [
            "entry", "duration", "screenWakes", "unlocks", "unlockDuration", "wakeSource", "unlockSource", "category", "app0",
            "app1", "app2", "app3", "app4", "app5", "app6", "app7", "app8", "usageTime", "textInputSessions",
            "relativeStartTime", "event", "events",
        ],
        .phoneUsage: ["duration", "incomingCalls", "outgoingCalls", "callDuration", "uniqueContacts"],
        .messagesUsage: ["duration", "incomingMessages", "outgoingMessages", "uniqueContacts"],
        .visits: [
            "distance", "arrivalStart", "arrivalEnd", "departureStart", "departureEnd", "category", "id0", "id1", "id2", "id3",
        ],
    ]

    @Test func everyLayoutHasExactlyOneFamilyWithTheProtocolsColumns() {
        #expect(SensorFamilies.all.count == BatchLayout.allCases.count)
        for layout in BatchLayout.allCases {
            #expect(SensorFamilies.all.filter { $0.layout == layout }.count == 1, "\(layout)")
            #expect(SensorFamilies.family(of: layout).layout == layout)
            #expect(layout.columns == Self.protocolColumns[layout], "\(layout)")
        }
    }

    /// §5.2's table names each layout's columns, in order, as the backticked lower-case words of
    /// its third cell: exactly the family's wire columns.
    @Test func documentedLayoutColumnsAreTheFamilies() throws {
        let lines = try ProtocolDocExampleTests.documentText().split(separator: "\n")
        for layout in BatchLayout.allCases {
            let row = try #require(lines.first { $0.hasPrefix("| \(layout.rawValue) `\(layout)` |") }, "§5.2 row of \(layout)")
            let cell = row.split(separator: "|")[2]
            let words = cell.split(separator: "`", omittingEmptySubsequences: false).enumerated()
                .filter { $0.offset % 2 == 1 }.map { String($0.element) }
                .filter { $0.first?.isLowercase == true && $0.allSatisfy { $0.isLetter || $0.isNumber } }
            #expect(words == layout.columns, "docs/protocol.md §5.2, layout \(layout)")
        }
    }

    @Test func everySupportedSensorHasTheLayoutItHadAndNoOtherDoes() {
        let expected: [SRSensor: BatchLayout] = [
            .accelerometer: .motion, .rotationRate: .motion, .ambientPressure: .pressure,
            .ambientLightSensor: .ambientLight, .pedometerData: .pedometer, .heartRate: .heartRate,
            .onWristState: .wrist, .electrocardiogram: .electrocardiogram, .photoplethysmogram: .photoplethysmogram,
            .keyboardMetrics: .keyboardMetrics, .deviceUsageReport: .deviceUsage,
            .phoneUsageReport: .phoneUsage, .messagesUsageReport: .messagesUsage, .visits: .visits,
        ]
        for descriptor in SensorCatalog.all {
            #expect(BatchLayout.of(descriptor.sensor) == expected[descriptor.sensor], "\(descriptor.name)")
            #expect(descriptor.isSupportedOnLinux == (expected[descriptor.sensor] != nil), "\(descriptor.name)")
            if let records = descriptor.sensor.deletionRecordSensor { #expect(BatchLayout.of(records) == .deletionRecords) }
        }
    }

    /// Existing stores name their columns this way; the BLE families store SensorKit units
    /// under the wire names (heart rate adds one column per RR interval slot).
    @Test func storedNamesAreTheOnesStoresHold() {
        #expect(MotionFamily.Stored.names == ["x", "y", "z"])
        #expect(PressureFamily.Stored.names == ["pressure", "temperature"])
        #expect(LightFamily.Stored.names == ["illuminance", "red", "green", "blue", "clear"])
        #expect(PedometerFamily.Stored.names == ["steps", "end"])
        #expect(
            HeartRateFamily.Stored.names
                == BatchLayout.heartRate.columns + (0..<HeartRateFamily.rrLimit).map { "rr\($0)" } + [
                    "ppInterval", "ppErrorEstimate", "ppFlags", "energyExpended",
                ])
        #expect(HeartRateFamily.Stored.rrSlots.count == HeartRateFamily.rrLimit && HeartRateFamily.Stored.rr(15) == .rr15)
        #expect(WristFamily.Stored.names == BatchLayout.wrist.columns)
        #expect(ElectrocardiogramFamily.Stored.names == BatchLayout.electrocardiogram.columns)
        #expect(PhotoplethysmogramFamily.Stored.names == BatchLayout.photoplethysmogram.columns)
    }

    @Test func linearFamiliesAreTheOnesWhoseChunksMayBeHandedOver() {
        #expect(
            BatchLayout.allCases.filter(SensorFamilies.isLinear) == [
                .motion, .wrist, .electrocardiogram, .photoplethysmogram, .deviceUsage, .phoneUsage, .messagesUsage,
                .visits,
            ])
    }

    // MARK: Conversions on fixed inputs

    /// Maps `stored` (one array per stored column) through the layout's family into a frame.
    func map(
        _ layout: BatchLayout, sensor: SRSensor, columns: [(String, ColumnMapping.Source)], stored: [[Int64]],
        details: [String: String] = [:], bootAnchor: Int64 = 0
    ) throws -> SampleBatchFrame {
        let mapping = try #require(
            try SensorFamilies.mapping(
                layout: layout, sensor: sensor, names: columns.map(\.0),
                sources: columns.map(\.1), details: details))
        let count = stored.first?.count ?? 0
        // Storage full of a sentinel, which the writer does not clear: a wire column the family
        // leaves unwritten keeps it.
        var storage = [UInt8](repeating: 0xA5, count: 1 << 16)
        let raggedCount = ColumnMapping.withBuffers(stored, 0..<count) {
            mapping.raggedCount(stored: $0, count: count, bootAnchor: bootAnchor)
        }
        let size = BatchFrameWriter.write(into: &storage, requestID: 1, layout: layout, count: count, raggedCount: raggedCount) {
            sections in
            for i in 0..<count { sections.sensorTimes[i] = Int64(i); sections.writeTimes[i] = Int64(i) }
            ColumnMapping.withBuffers(stored, 0..<count) {
                mapping.write(stored: $0, count: count, bootAnchor: bootAnchor, into: sections)
            }
        }
        let batch = try SampleBatchFrame.decode(Array(storage[Frame.headerSize..<size]))
        for (index, column) in batch.columns.enumerated() {
            #expect(
                !column.contains { $0.bitPattern == 0xA5A5_A5A5_A5A5_A5A5 }, "\(layout) leaves wire column \(index) unwritten")
        }
        return batch
    }

    static func counts(scale: Double, offset: Double = 0) -> ColumnMapping.Source {
        ColumnMapping.Source(isFloat: false, scale: scale, offset: offset)
    }

    @Test func motionAppliesTheMountMatrixAndDividesAccelerationByG() throws {
        let matrix = try MountMatrix(parsing: "0, 1, 0; -1, 0, 0; 0, 0, 1")
        let scale = 0.000598
        let columns = MotionFamily.Stored.names.map { ($0, Self.counts(scale: scale)) }
        let stored: [[Int64]] = [[100, -7, 16384], [200, 3, 0], [-300, 9, 1]]
        for sensor in MotionFamily.sensors {
            let batch = try map(
                .motion, sensor: sensor, columns: columns, stored: stored,
                details: [MotionFamily.mountMatrixDetail: matrix.description])
            for i in 0..<3 {
                let chip = SIMD3(Double(stored[0][i]) * scale, Double(stored[1][i]) * scale, Double(stored[2][i]) * scale)
                let device = matrix.apply(chip) / (sensor == .accelerometer ? UnitConversion.standardGravity : 1)
                for axis in 0..<3 { #expect(abs(batch.columns[axis][i] - device[axis]) <= 1e-15 * max(1, abs(device[axis]))) }
            }
        }
    }

    @Test func motionWithoutAnAxisIsRefusedNamingIt() {
        #expect(throws: MissingStoredColumn(column: "z")) {
            try SensorFamilies.mapping(
                layout: .motion, sensor: .accelerometer, names: ["x", "y"],
                sources: [Self.counts(scale: 1), Self.counts(scale: 1)], details: [:])
        }
    }

    /// A stored matrix that does not parse must not be taken for the identity: that would hand
    /// out a rotated device frame as if it were right. A stream without one keeps the identity.
    @Test(arguments: ["1, 0, 0; 0, 1, 0", "1, 0, 0; 0, 1, 0; 0, 0, 0", "identity", ""])
    func motionWithAnUnreadableStoredMatrixIsRefusedNamingIt(text: String) throws {
        let names = MotionFamily.Stored.names
        do throws(MissingStoredColumn) {
            _ = try SensorFamilies.mapping(
                layout: .motion, sensor: .accelerometer, names: names,
                sources: names.map { _ in Self.counts(scale: 1) }, details: [MotionFamily.mountMatrixDetail: text])
            Issue.record("mapped with the stored matrix '\(text)'")
        } catch {
            #expect(error.column == MotionFamily.mountMatrixDetail)
            #expect(error.problem?.contains("mount matrix") == true, "\(error)")
        }
        let identity = try map(
            .motion, sensor: .rotationRate, columns: names.map { ($0, Self.counts(scale: 1)) },
            stored: [[1], [2], [3]])
        #expect(identity.columns == [[1], [2], [3]])
    }

    @Test func pressureIsKilopascalsAndDegreesWithNaNWithoutATemperature() throws {
        let both = try map(
            .pressure, sensor: .ambientPressure,
            columns: [("temperature", Self.counts(scale: 10)), ("pressure", Self.counts(scale: 0.000003906))],
            stored: [[2500, 2510], [25_000_000, 25_600_000]])
        #expect(both.columns[0] == [25_000_000 * 0.000003906, 25_600_000 * 0.000003906])
        #expect(both.columns[1] == [25.0, 25.1])
        let bare = try map(
            .pressure, sensor: .ambientPressure, columns: [("pressure", Self.counts(scale: 0.001))], stored: [[101_325]])
        #expect(bare.columns[0] == [101_325 * 0.001] && bare.columns[1][0].isNaN)
        #expect(throws: MissingStoredColumn(column: "pressure")) {
            try SensorFamilies.mapping(
                layout: .pressure, sensor: .ambientPressure, names: ["temperature"],
                sources: [Self.counts(scale: 1)], details: [:])
        }
    }

    @Test func lightGivesLuxChromaticityAndThePlacementOfTheStream() throws {
        let columns = ["illuminance", "red", "green", "blue"].map { ($0, Self.counts(scale: $0 == "illuminance" ? 0.5 : 1)) }
        let batch = try map(
            .ambientLight, sensor: .ambientLightSensor, columns: columns,
            stored: [[200, 0], [10, 0], [10, 0], [10, 0]], details: [LightFamily.placementDetail: "3"])
        let white = Chromaticity.estimate(red: 10, green: 10, blue: 10)
        #expect(batch.columns[0] == [100, 0])
        #expect(batch.columns[1] == [white.x, 0] && batch.columns[2] == [white.y, 0])
        #expect(batch.columns[3] == [3, 3])
        let colourOnly = try map(
            .ambientLight, sensor: .ambientLightSensor, columns: [("red", Self.counts(scale: 1))], stored: [[5]])
        #expect(colourOnly.columns[0][0].isNaN && colourOnly.columns[1] == [0] && colourOnly.columns[3] == [0])
    }

    @Test func pedometerEndsAreBootClockPlusTheAnchor() throws {
        let batch = try map(
            .pedometer, sensor: .pedometerData,
            columns: [("steps", Self.counts(scale: 1)), ("end", Self.counts(scale: 1))],
            stored: [[12, 0], [5_000_000_000, 10_000_000_000]], bootAnchor: 1_000_000)
        #expect(batch.columns[0] == [5_001_000_000, 10_001_000_000])
        #expect(batch.columns[1] == [12, 0])
    }

    /// BLE streams store SensorKit units under the wire names, integers or floats; a column the
    /// stream lacks is NaN.
    @Test(arguments: [BatchLayout.heartRate, .wrist, .electrocardiogram, .photoplethysmogram])
    func bleFamiliesCopyTheirNamedColumns(_ layout: BatchLayout) throws {
        let names = Array(layout.columns.reversed().dropFirst())
        let stored = names.indices.map { column in [Int64(column * 10), Int64(column * 10 + 1)] }
        let float = ColumnMapping.Source(isFloat: true)
        let sources = names.indices.map { $0 == 0 ? float : Self.counts(scale: 1) }
        var bits = stored
        bits[0] = [Int64(bitPattern: (2.5).bitPattern), Int64(bitPattern: (-0.125).bitPattern)]
        let sensor = try #require(SensorFamilies.family(of: layout).sensors.first)
        let batch = try map(layout, sensor: sensor, columns: Array(zip(names, sources)), stored: bits)
        for (index, name) in layout.columns.enumerated() {
            if let position = names.firstIndex(of: name) {
                #expect(batch.columns[index] == (position == 0 ? [2.5, -0.125] : stored[position].map(Double.init)), "\(name)")
            } else {
                let values = batch.columns[index]
                #expect(values.allSatisfy { $0.isNaN }, "\(name)")
            }
        }
    }

    /// A PPI row (`ppInterval` ≥ 0) gives its one PP interval as its ragged value; an HRS row
    /// (−1) its RR slots; a stream recorded before the PP columns existed reads as it always did.
    @Test func heartRateRowsGiveTheirPPIntervalOrTheirRRSlots() throws {
        func ragged(_ names: [String], _ stored: [[Int64]]) throws -> [Double] {
            let sources = names.map { name in
                Self.counts(scale: name.hasPrefix("rr") && name != "rrCount" ? 1.0 / 1024 : name == "ppInterval" ? 0.001 : 1)
            }
            let batch = try map(.heartRate, sensor: .heartRate, columns: Array(zip(names, sources)), stored: stored)
            return batch.ragged
        }
        let old = ["bpm", "confidence", "rrCount", "rr0", "rr1"]
        #expect(try ragged(old, [[60, 61], [2, 2], [2, 1], [1024, 512], [512, 0]]) == [1, 0.5, 0.5])
        let new = old + ["ppInterval", "ppErrorEstimate", "ppFlags", "energyExpended"]
        let rows: [[Int64]] = [[60, 61], [2, 2], [2, 1], [1024, 0], [512, 0], [-1, 987], [-1, 6], [-1, 6], [120, -1]]
        #expect(try ragged(new, rows) == [1, 0.5, Double(987) * 0.001])
    }

    // MARK: Client side

    struct Collected: FetchResultBuilder {
        var each: [AnyObject] = []
        var batches: [SampleList] = []
        mutating func each(_ make: (Int) -> AnyObject) { for i in 0..<3 { each.append(make(i)) } }
        mutating func batch(_ samples: SampleList) { batches.append(samples) }
        mutating func groups(_ runs: [Range<Int>], _ make: (Range<Int>) -> AnyObject) { each += runs.map(make) }
    }

    func frame(_ layout: BatchLayout, _ columns: [[Double]], ragged: [Double] = []) -> SampleBatchFrame {
        SampleBatchFrame(
            requestID: 1, layout: layout, sensorTimes: [1_000, 2_000, 3_000], writeTimes: [1_000, 2_000, 3_000],
            columns: columns, ragged: ragged)
    }

    @Test func accelerometerAndGyroscopeBatchesBecomeOneArrayOfTheirSamples() throws {
        let columns: [[Double]] = [[0.1, 0.2, 0.3], [1, 2, 3], [-1, -2, -3]]
        var accelerometer = Collected(), gyroscope = Collected()
        SensorFamilies.results(
            frame(.motion, columns), sensor: .accelerometer, dates: SampleDates(cfOffset: 0, anchor: 0), into: &accelerometer)
        SensorFamilies.results(
            frame(.motion, columns), sensor: .rotationRate, dates: SampleDates(cfOffset: 0, anchor: 0), into: &gyroscope)
        let samples = try #require(accelerometer.batches.first?.value as? [CMRecordedAccelerometerData])
        #expect(samples.map(\.acceleration.y) == [1, 2, 3] && samples.map(\.timestamp) == [1e-6, 2e-6, 3e-6])
        let rates = try #require(gyroscope.batches.first?.value as? [CMRecordedRotationRateData])
        #expect(rates.map(\.rotationRate.z) == [-1, -2, -3] && accelerometer.each.isEmpty)
    }

    /// docs/protocol.md §5.2: one optical sample per channel a PPG stream stores (NaN columns are
    /// the channels its frame type lacks), its emitter and signal identifier the wire position;
    /// the status word is no optical sample.
    @Test func photoplethysmogramSamplesHaveOneOpticalSamplePerStoredChannel() throws {
        let nan = [Double](repeating: .nan, count: 3)
        // A type-0 stream (ppg0…ppg2, ambient) and a type-7 stream (ppg0…ppg15, status).
        let type0: [[Double]] = (0..<22).map { c in c < 3 || c == 20 ? [1, 2, 3].map { Double(100 * c) + $0 } : nan }
        let type7: [[Double]] = (0..<22).map { c in c < 16 || c == 21 ? [1, 2, 3].map { Double(100 * c) + $0 } : nan }
        for (columns, identifiers) in [(type0, [0, 1, 2, 20]), (type7, Array(0..<16))] {
            var results = Collected()
            SensorFamilies.results(
                frame(.photoplethysmogram, columns), sensor: .photoplethysmogram, dates: SampleDates(cfOffset: 0, anchor: 0),
                into: &results)
            let samples = try #require(results.batches.first?.value as? [SRPhotoplethysmogramSample])
            #expect(samples.count == 3)
            for (row, sample) in samples.enumerated() {
                #expect(sample.opticalSamples.map(\.signalIdentifier) == identifiers)
                #expect(sample.opticalSamples.map(\.emitter) == identifiers)
                #expect(sample.opticalSamples.map(\.normalizedReflectance) == identifiers.map { columns[$0][row] })
                #expect(sample.nanosecondsSinceStart == Int64(1_000 * row))
            }
        }
    }

    @Test func heartRateSamplesTakeTheirShareOfTheRaggedValues() throws {
        var results = Collected()
        SensorFamilies.results(
            frame(.heartRate, [[60, 61, 62], [2, 2, 2], [1, 0, 2]], ragged: [0.9, 0.8, 0.7]),
            sensor: .heartRate, dates: SampleDates(cfOffset: 0, anchor: 0), into: &results)
        let samples = try #require(results.each as? [CMHighFrequencyHeartRateData])
        #expect(samples.map(\.heartRate) == [60, 61, 62])
        #expect(samples.map(\.rrIntervals) == [[0.9], [], [0.8, 0.7]])
    }

    /// Keyboard intervals: counts in SI units, the typing speed derived, one session per episode;
    /// a damaged store's NaN or absurd counts read as 0 or the bound, never a trap.
    @Test func keyboardIntervalsBecomeKeyboardMetricsOfCountsOnly() throws {
        let s: Int64 = 1_000_000_000
        let stored: [[Int64]] = [
            [900 * s, 900 * s], [40, 0], [3, 0], [7, 0], [30, 0], [2, 0], [1, 0], [6 * s, 0], [0, 0],
        ]
        let batch = try map(
            .keyboardMetrics, sensor: .keyboardMetrics,
            columns: KeyboardMetricsFamily.Stored.allCases.map { ($0.rawValue, Self.source($0)) }, stored: stored)
        #expect(batch.columns[KeyboardMetricsFamily.Wire.duration.ordinal] == [900, 900])
        #expect(batch.columns[KeyboardMetricsFamily.Wire.typingSpeed.ordinal] == [5, 0])
        var results = Collected()
        SensorFamilies.results(
            frame(
                .keyboardMetrics,
                [
                    [900, 900, 900], [40, 0, .nan], [3, 0, 1e300], [7, 0, -5], [2, 0, 1e12], [1, 0, 0], [6, 0, 0], [5, 0, 0],
                ]),
            sensor: .keyboardMetrics, dates: SampleDates(cfOffset: 0, anchor: 0), into: &results)
        let metrics = try #require(results.each as? [SRKeyboardMetrics])
        #expect(metrics.map(\.totalTaps) == [40, 0, 0])
        #expect(metrics.map(\.totalDeletes) == [3, 0, Int(Int32.max)])
        #expect(metrics.map(\.totalWords) == [7, 0, 0])
        #expect(metrics[0].totalTypingEpisodes == 2 && metrics[0].totalPauses == 1)
        #expect(metrics[0].sessionIdentifiers == ["-899999999000.0", "-899999999000.1"])
        #expect(metrics[2].sessionIdentifiers.count == KeyboardMetricsFamily.maximumSessionsPerInterval)
        #expect(metrics[0].typingSpeed == 5 && metrics[0].totalTypingDuration == 6 && metrics[0].duration == 900)
        #expect(metrics[0].keyboardIdentifier == KeyboardMetricsFamily.keyboardIdentifier)
    }

    static func source(_ column: KeyboardMetricsFamily.Stored) -> ColumnMapping.Source {
        switch KeyboardMetricsFamily.kind(column) {
        case .count(let scale, _, _): counts(scale: scale)
        case .float, .bootInstant: counts(scale: 1)
        }
    }
}
