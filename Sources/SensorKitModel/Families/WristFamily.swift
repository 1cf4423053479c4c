/// On-wrist state from the HRS sensor-contact bit (docs/sensorkit-mapping.md). A stream stores
/// its columns in SensorKit units under the wire names (`Column`), mapped as they are.
public enum WristFamily: SensorFamily {
    /// The stored and the wire columns alike.
    public enum Column: String, FamilyColumn {
        /// 1 on the wrist, 0 off.
        case onWrist
        /// `SRWristDetection.WristLocation` raw value.
        case wristLocation
        /// `SRWristDetection.CrownOrientation` raw value.
        case crownOrientation
    }
    public typealias Stored = Column
    public typealias Wire = Column

    public static let layout = BatchLayout.wrist
    public static let sensors: [SRSensor] = [.onWristState]
    public static let isLinear = true

    public static func mapping(_ stream: StoredStream<Stored>) throws(MissingStoredColumn) -> StoredMapping<Stored, Wire> {
        .linear(stream.copies())
    }

    public static func results<Results: FetchResultBuilder>(_ batch: FamilyBatch<Wire>, into results: inout Results) {
        let (t, dates) = (batch.times, batch.dates)
        let (onWrist, location, crown) = (batch[.onWrist], batch[.wristLocation], batch[.crownOrientation])
        results.each {
            let on = onWrist[$0] != 0
            return SRWristDetection(
                onWrist: on,
                wristLocation: SRWristDetection.WristLocation(rawValue: Int(location[$0])) ?? .left,
                crownOrientation: SRWristDetection.CrownOrientation(rawValue: Int(crown[$0])) ?? .right,
                onWristDate: on ? dates.date(t[$0]) : nil, offWristDate: on ? nil : dates.date(t[$0]))
        }
    }
}
