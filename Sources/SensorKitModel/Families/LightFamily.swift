import Foundation

/// Ambient light (docs/sensorkit-mapping.md): IIO `in_illuminance*` and
/// `in_intensity_{red,green,blue,clear}` stored as counts with their scale; lux and CIE xy
/// chromaticity by `LightReading`, the placement from the stream's details.
public enum LightFamily: SensorFamily {
    public enum Stored: String, FamilyColumn {
        /// Lux after scale and offset.
        case illuminance
        /// Unit-less intensity counts.
        case red, green, blue, clear
    }

    public enum Wire: String, FamilyColumn {
        case lux, chromaticityX, chromaticityY
        /// `SRAmbientLightSample.SensorPlacement` raw value.
        case placement
    }

    public static let layout = BatchLayout.ambientLight
    public static let sensors: [SRSensor] = [.ambientLightSensor]
    public static let isLinear = false

    public static func storedUnit(_ column: Stored) -> String {
        column == .illuminance ? "lux" : "counts"
    }

    /// The stream's source detail holding its placement (`SensorPlacement` raw value).
    public static let placementDetail = "placement"

    public static func mapping(_ stream: StoredStream<Stored>) throws(MissingStoredColumn) -> StoredMapping<Stored, Wire> {
        let placement = stream.details[placementDetail].flatMap { Int($0) }.map(Double.init) ?? 0
        return .perSample { stored, wire in
            let lux = stored.physical(.illuminance)
            let red = stored.physical(.red), green = stored.physical(.green), blue = stored.physical(.blue)
            let (luxColumn, x, y) = (wire[.lux], wire[.chromaticityX], wire[.chromaticityY])
            for i in 0..<stored.count {
                let reading = LightReading(illuminance: lux?[i], red: red?[i], green: green?[i], blue: blue?[i])
                luxColumn[i] = reading.lux ?? .nan
                x[i] = reading.chromaticity.x
                y[i] = reading.chromaticity.y
            }
            wire[.placement].fill(placement)
        }
    }

    public static func results<Results: FetchResultBuilder>(_ batch: FamilyBatch<Wire>, into results: inout Results) {
        let (lux, x, y, placement) = (batch[.lux], batch[.chromaticityX], batch[.chromaticityY], batch[.placement])
        results.each {
            SRAmbientLightSample(
                placement: SRAmbientLightSample.SensorPlacement(rawValue: Int(placement[$0])) ?? .unknown,
                chromaticity: .init(x: Float32(x[$0]), y: Float32(y[$0])),
                lux: Measurement(value: lux[$0], unit: .lux))
        }
    }
}
