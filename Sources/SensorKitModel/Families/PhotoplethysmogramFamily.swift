import Foundation

/// PPG from Polar PMD (docs/sensorkit-mapping.md, docs/ble.md): four optical channels and
/// ambient, raw counts. A stream stores them under the wire names (`Column`), mapped as they are.
public enum PhotoplethysmogramFamily: SensorFamily {
    /// The stored and the wire columns alike; each becomes the optical sample of the same
    /// emitter and signal identifier (its position).
    public enum Column: String, FamilyColumn {
        case ppg0, ppg1, ppg2, ppg3, ambient
    }
    public typealias Stored = Column
    public typealias Wire = Column

    public static let layout = BatchLayout.photoplethysmogram
    public static let sensors: [SRSensor] = [.photoplethysmogram]
    public static let isLinear = true

    public static func mapping(_ stream: StoredStream<Stored>) throws(MissingStoredColumn) -> StoredMapping<Stored, Wire> {
        .linear(stream.copies())
    }

    public static func results<Results: FetchResultBuilder>(_ batch: FamilyBatch<Wire>, into results: inout Results) {
        let (t, dates) = (batch.times, batch.dates)
        let channels = Column.allCases.map { batch[$0] }
        let start = t[0]
        results.batch(
            batch.indices.map { i in
                SRPhotoplethysmogramSample(
                    startDate: dates.date(start), nanosecondsSinceStart: t[i] - start, usage: [],
                    opticalSamples: channels.indices.map { channel in
                        SRPhotoplethysmogramOpticalSample(
                            emitter: channel, activePhotodiodeIndexes: IndexSet(integer: 0), signalIdentifier: channel,
                            nominalWavelength: Measurement(value: 0, unit: .nanometers),
                            effectiveWavelength: Measurement(value: 0, unit: .nanometers),
                            samplingFrequency: Measurement(value: 0, unit: .hertz), nanosecondsSinceStart: t[i] - start,
                            normalizedReflectance: channels[channel][i])
                    },
                    accelerometerSamples: [], temperature: nil)
            })
    }
}
