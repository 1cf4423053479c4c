import Foundation

/// Pedometer (docs/sensorkit-mapping.md): IIO `in_steps_input`, polled; each reading closes one
/// interval whose start is the sample's sensor time.
public enum PedometerFamily: SensorFamily {
    public enum Stored: String, FamilyColumn {
        /// Steps in the interval.
        case steps
        /// The interval's end, `CLOCK_BOOTTIME` ns of the sample's boot.
        case end
    }

    public enum Wire: String, FamilyColumn {
        /// The interval's end, SR ns as a Double.
        case endTime
        case steps
    }

    public static let layout = BatchLayout.pedometer
    public static let sensors: [SRSensor] = [.pedometerData]
    public static let isLinear = false

    public static func storedUnit(_ column: Stored) -> String {
        switch column {
        case .steps: "steps"
        case .end: "ns"
        }
    }

    public static func mapping(_ stream: StoredStream<Stored>) throws(MissingStoredColumn) -> StoredMapping<Stored, Wire> {
        _ = try stream.require(.steps)
        _ = try stream.require(.end)
        return .perSample { stored, wire in
            // `end` is boot-clock ns of the same boot: SR ns = anchor + it.
            let end = stored.raw(.end)!, ends = wire[.endTime]
            for i in 0..<stored.count { ends[i] = Double(end[i] &+ stored.bootAnchor) }
            stored.physical(.steps)!.write(to: wire[.steps])
        }
    }

    public static func results<Results: FetchResultBuilder>(_ batch: FamilyBatch<Wire>, into results: inout Results) {
        let (t, dates) = (batch.times, batch.dates)
        let (end, steps) = (batch[.endTime], batch[.steps])
        results.each {
            CMPedometerData(
                startDate: dates.date(t[$0]), endDate: dates.date(Int64(end[$0])),
                numberOfSteps: NSNumber(value: Int(steps[$0])))
        }
    }
}
