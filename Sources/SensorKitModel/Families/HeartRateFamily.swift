/// Heart rate from the BLE Heart Rate Service (docs/sensorkit-mapping.md). A stream stores its
/// columns in SensorKit units under the wire names (`Column`) and its RR intervals in
/// `rr0`…`rr15` beside `rrCount` (docs/ble.md, "What is stored"); a batch carries the RR
/// intervals (s) as its ragged values, `rrCount` of them per sample. A row from a Polar PPI
/// frame carries its one PP interval in `ppInterval` instead of the RR slots (its ragged value).
public enum HeartRateFamily: SensorFamily {
    /// The wire columns, stored under the same names.
    public enum Column: String, FamilyColumn {
        /// Beats per minute.
        case bpm
        /// `CMHighFrequencyHeartRateDataConfidence` raw value.
        case confidence
        /// How many of the ragged values are this sample's RR intervals.
        case rrCount
    }
    public typealias Wire = Column

    /// RR intervals kept per measurement; a strap sends at most a few a second.
    public static let rrLimit = 16

    /// The stored columns: the wire columns, one column per RR interval slot (seconds), then
    /// what only the store keeps: a PPI row's PP interval, its error estimate and flags, and the
    /// Heart Rate Service's energy expended (−1 where a row has none). Streams recorded before
    /// the last four existed lack them and read as before.
    public enum Stored: String, FamilyColumn {
        case bpm, confidence, rrCount
        case rr0, rr1, rr2, rr3, rr4, rr5, rr6, rr7, rr8, rr9, rr10, rr11, rr12, rr13, rr14, rr15
        case ppInterval, ppErrorEstimate, ppFlags, energyExpended

        /// RR slot `index` (0 ..< `rrLimit`).
        public static func rr(_ index: Int) -> Stored { rrSlots[index] }
        public static let rrSlots: [Stored] = Array(allCases[3..<(3 + rrLimit)])
    }

    public static var maxRaggedValuesPerSample: Int { rrLimit }

    public static let layout = BatchLayout.heartRate
    public static let sensors: [SRSensor] = [.heartRate]
    /// Not linear: the RR intervals are ragged values, which a `ColumnMapping` does not carry.
    public static let isLinear = false

    public static func mapping(_ stream: StoredStream<Stored>) throws(MissingStoredColumn) -> StoredMapping<Stored, Wire> {
        .perSample { stored, wire in
            for column in Column.allCases {
                let source = Stored(rawValue: column.rawValue)!
                if let values = stored.physical(source) { values.write(to: wire[column]) } else { wire[column].fill(.nan) }
            }
            writeRRIntervals(stored, into: wire.sections.ragged)
        }
    }

    /// The number of RR intervals sample `i` carries: its `rrCount`, clamped to the slots the
    /// stream has (a hostile or damaged count never reads past them).
    private static func rrCount(_ counts: PhysicalValues, _ i: Int, slots: Int) -> Int {
        let value = counts[i]
        return value.isFinite ? Int(max(0, min(Double(slots), value))) : 0
    }

    private static func rrSlots(_ stored: StoredValues<Stored>) -> [PhysicalValues] {
        var slots: [PhysicalValues] = []
        for slot in Stored.rrSlots {
            guard let values = stored.physical(slot) else { break }
            slots.append(values)
        }
        return slots
    }

    public static func raggedCount(_ stored: StoredValues<Stored>) -> Int {
        guard let counts = stored.physical(.rrCount) else { return 0 }
        let slots = rrSlots(stored).count
        let pulse = stored.raw(.ppInterval)
        return (0..<stored.count).reduce(0) { total, i in
            let count = rrCount(counts, i, slots: slots)
            return total + (pulse.map { $0[i] >= 0 } == true ? min(count, 1) : count)
        }
    }

    /// Each sample's intervals, oldest first: its PP interval where it has one (a PPI row stores
    /// it, ≥ 0, with `rrCount` 1), otherwise its RR slots.
    private static func writeRRIntervals(_ stored: StoredValues<Stored>, into ragged: WireColumn<Double>) {
        guard ragged.count > 0, let counts = stored.physical(.rrCount) else { return }
        let slots = rrSlots(stored)
        let pulse = stored.raw(.ppInterval).flatMap { raw in stored.physical(.ppInterval).map { (raw, $0) } }
        var next = 0
        for i in 0..<stored.count {
            let count = rrCount(counts, i, slots: slots.count)
            if let (raw, seconds) = pulse, raw[i] >= 0 {
                if count > 0, next < ragged.count {
                    ragged[next] = seconds[i]
                    next += 1
                }
                continue
            }
            for slot in slots.prefix(count) where next < ragged.count {
                ragged[next] = slot[i]
                next += 1
            }
        }
    }

    public static func results<Results: FetchResultBuilder>(_ batch: FamilyBatch<Wire>, into results: inout Results) {
        let (t, dates, ragged) = (batch.times, batch.dates, batch.ragged)
        let (bpm, confidence, rrCount) = (batch[.bpm], batch[.confidence], batch[.rrCount])
        var offset = 0
        results.each { i in
            let count = Int(rrCount[i])
            let rr = Array(ragged[min(offset, ragged.count)..<min(offset + count, ragged.count)])
            offset += count
            return CMHighFrequencyHeartRateData(
                heartRate: bpm[i], confidence: CMHighFrequencyHeartRateDataConfidence(rawValue: Int(confidence[i])) ?? .low,
                date: dates.date(t[i]), timestamp: dates.uptime(t[i]), rrIntervals: rr)
        }
    }
}
