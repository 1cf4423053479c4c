/// Deletion records of any sensor (`SRSensor.deletionRecordSensor`): the store keeps them apart
/// from samples, so this layout has wire columns and results but no stored schema.
public enum DeletionRecordsFamily: BatchFamily {
    public enum Wire: String, FamilyColumn {
        /// The lost interval's end, SR ns as a Double; its start is the sample's sensor time.
        case endTime
        /// `SRDeletionReason` raw value.
        case reason
    }

    public static let layout = BatchLayout.deletionRecords
    /// Every sensor's deletion-record stream; `BatchLayout.of` matches them by their parent.
    public static let sensors: [SRSensor] = []

    public static func results<Results: FetchResultBuilder>(_ batch: FamilyBatch<Wire>, into results: inout Results) {
        let t = batch.times
        let (end, reason) = (batch[.endTime], batch[.reason])
        results.each {
            SRDeletionRecord(
                startTime: SRAbsoluteTime(nanoseconds: t[$0]), endTime: SRAbsoluteTime(nanoseconds: Int64(end[$0])),
                reason: SRDeletionReason(rawValue: Int(reason[$0])) ?? .systemInitiated)
        }
    }
}
