import Foundation

/// Ambient pressure (docs/sensorkit-mapping.md): IIO `in_pressure*` (kPa) and `in_temp*`
/// (milli-°C) stored as counts with their scale, converted by `PressureReading`.
public enum PressureFamily: SensorFamily {
    public enum Stored: String, FamilyColumn {
        /// kPa after scale and offset.
        case pressure
        /// Milli-°C after scale and offset; absent when the chip has no temperature channel.
        case temperature
    }

    public enum Wire: String, FamilyColumn {
        /// kPa.
        case pressure
        /// °C; NaN when the stream has no temperature.
        case temperature
    }

    public static let layout = BatchLayout.pressure
    public static let sensors: [SRSensor] = [.ambientPressure]
    public static let isLinear = false

    public static func storedUnit(_ column: Stored) -> String {
        switch column {
        case .pressure: "kPa"
        case .temperature: "m°C"
        }
    }

    public static func mapping(_ stream: StoredStream<Stored>) throws(MissingStoredColumn) -> StoredMapping<Stored, Wire> {
        _ = try stream.require(.pressure)
        return .perSample { stored, wire in
            let pressure = stored.physical(.pressure)!, temperature = stored.physical(.temperature)
            let (kilopascals, celsius) = (wire[.pressure], wire[.temperature])
            for i in 0..<stored.count {
                let reading = PressureReading(iioPressure: pressure[i], iioTemperature: temperature?[i])
                kilopascals[i] = reading.kilopascals
                celsius[i] = reading.celsius ?? .nan
            }
        }
    }

    public static func results<Results: FetchResultBuilder>(_ batch: FamilyBatch<Wire>, into results: inout Results) {
        let (t, dates) = (batch.times, batch.dates)
        let (pressure, temperature) = (batch[.pressure], batch[.temperature])
        let batchID = UInt64(bitPattern: t[0])
        results.batch(
            batch.indices.map {
                CMRecordedPressureData(
                    identifier: batchID, pressure: Measurement(value: pressure[$0], unit: .kilopascals),
                    temperature: Measurement(value: temperature[$0], unit: .celsius),
                    startDate: dates.date(t[$0]), timestamp: dates.uptime(t[$0]))
            })
    }
}
