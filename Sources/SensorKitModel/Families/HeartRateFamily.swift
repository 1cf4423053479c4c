/// Heart rate from the BLE Heart Rate Service (docs/sensorkit-mapping.md). A stream stores its
/// columns in SensorKit units under the wire names (`Column`); the RR intervals (s) are the
/// batch's ragged values, `rrCount` of them per sample.
public enum HeartRateFamily: SensorFamily {
    /// The stored and the wire columns alike.
    public enum Column: String, FamilyColumn {
        /// Beats per minute.
        case bpm
        /// `CMHighFrequencyHeartRateDataConfidence` raw value.
        case confidence
        /// How many of the ragged values are this sample's RR intervals.
        case rrCount
    }
    public typealias Stored = Column
    public typealias Wire = Column

    public static let layout = BatchLayout.heartRate
    public static let sensors: [SRSensor] = [.heartRate]
    /// Not linear: the RR intervals are ragged values, which a `ColumnMapping` does not carry.
    public static let isLinear = false

    public static func mapping(_ stream: StoredStream<Stored>) throws(MissingStoredColumn) -> StoredMapping<Stored, Wire> {
        .perSample { stored, wire in
            for column in Column.allCases {
                if let values = stored.physical(column) { values.write(to: wire[column]) } else { wire[column].fill(.nan) }
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
