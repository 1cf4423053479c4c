import Foundation

/// PPG from Polar PMD (docs/sensorkit-mapping.md, docs/ble.md §2): up to twenty optical channels,
/// ambient and the frame's status word, raw counts. A stream stores the columns its PMD frame type
/// carries, fixed when it is registered (`WearableSamples.PPGFrameKind`), under the wire names
/// (`Column`), mapped as they are; a column the stream lacks is NaN on the wire.
public enum PhotoplethysmogramFamily: SensorFamily {
    /// The stored and the wire columns alike, in wire order. Frame type 0 stores `ppg0`…`ppg2`
    /// and `ambient`; type 7 `ppg0`…`ppg15` and `status`; type 10 `ppg0`…`ppg19` and `status`.
    public enum Column: String, FamilyColumn {
        case ppg0, ppg1, ppg2, ppg3, ppg4, ppg5, ppg6, ppg7, ppg8, ppg9
        case ppg10, ppg11, ppg12, ppg13, ppg14, ppg15, ppg16, ppg17, ppg18, ppg19
        case ambient
        /// The frame's per-sample status word (24 bits, unsigned); not an optical channel.
        case status
    }
    public typealias Stored = Column
    public typealias Wire = Column

    /// The optical channels, each the optical sample whose emitter and signal identifier is its
    /// wire position (`ppgN` → N, `ambient` → 20).
    public static let opticalChannels: [Column] = Column.allCases.filter { $0 != .status }

    public static let layout = BatchLayout.photoplethysmogram
    public static let sensors: [SRSensor] = [.photoplethysmogram]
    public static let isLinear = true

    public static func mapping(_ stream: StoredStream<Stored>) throws(MissingStoredColumn) -> StoredMapping<Stored, Wire> {
        .linear(stream.copies())
    }

    /// One `SRPhotoplethysmogramSample` per row, with one optical sample per channel its stream
    /// stores: a channel is NaN exactly when the stream lacks it (stored counts never are).
    public static func results<Results: FetchResultBuilder>(_ batch: FamilyBatch<Wire>, into results: inout Results) {
        let (t, dates) = (batch.times, batch.dates)
        let channels = opticalChannels.map { (identifier: $0.ordinal, values: batch[$0]) }
        let start = t[0]
        results.batch(
            batch.indices.map { i in
                SRPhotoplethysmogramSample(
                    startDate: dates.date(start), nanosecondsSinceStart: t[i] - start, usage: [],
                    opticalSamples: channels.filter { !$0.values[i].isNaN }.map { channel in
                        SRPhotoplethysmogramOpticalSample(
                            emitter: channel.identifier, activePhotodiodeIndexes: IndexSet(integer: 0),
                            signalIdentifier: channel.identifier,
                            nominalWavelength: Measurement(value: 0, unit: .nanometers),
                            effectiveWavelength: Measurement(value: 0, unit: .nanometers),
                            samplingFrequency: Measurement(value: 0, unit: .hertz), nanosecondsSinceStart: t[i] - start,
                            normalizedReflectance: channel.values[i])
                    },
                    accelerometerSamples: [], temperature: nil)
            })
    }
}
