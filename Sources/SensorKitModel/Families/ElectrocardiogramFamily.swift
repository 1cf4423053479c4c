import Foundation

/// ECG from Polar PMD (docs/sensorkit-mapping.md, docs/ble.md). A stream stores its columns in
/// SensorKit units under the wire names (`Column`), mapped as they are; a fetched batch becomes
/// one `SRElectrocardiogramSample` holding every value.
public enum ElectrocardiogramFamily: SensorFamily {
    /// The stored and the wire columns alike.
    public enum Column: String, FamilyColumn {
        /// µV.
        case microvolts
        /// `SRElectrocardiogramSample.Lead` raw value.
        case lead
        /// `SRElectrocardiogramData.Flags` raw value.
        case flags
        /// Hz.
        case frequency
        /// The session's start, SR ns as a Double (its identifier).
        case sessionStart
    }
    public typealias Stored = Column
    public typealias Wire = Column

    public static let layout = BatchLayout.electrocardiogram
    public static let sensors: [SRSensor] = [.electrocardiogram]
    public static let isLinear = true

    public static func mapping(_ stream: StoredStream<Stored>) throws(MissingStoredColumn) -> StoredMapping<Stored, Wire> {
        .linear(stream.copies())
    }

    public static func results<Results: FetchResultBuilder>(_ batch: FamilyBatch<Wire>, into results: inout Results) {
        let (t, dates) = (batch.times, batch.dates)
        let (microvolts, flags) = (batch[.microvolts], batch[.flags])
        let first = 0
        let session = SRElectrocardiogramSession(
            state: .active, sessionGuidance: .unguided,
            identifier: String(Int64(batch[.sessionStart][first])))
        let sample = SRElectrocardiogramSample(
            date: dates.date(t[first]), frequency: Measurement(value: batch[.frequency][first], unit: .hertz), session: session,
            lead: SRElectrocardiogramSample.Lead(rawValue: Int(batch[.lead][first])) ?? .leftArmMinusRightArm,
            data: batch.indices.map {
                SRElectrocardiogramData(
                    flags: .init(rawValue: UInt(flags[$0])),
                    value: Measurement(value: microvolts[$0], unit: .microvolts))
            })
        results.batch([sample])
    }
}
