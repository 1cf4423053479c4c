import IIOBridge
import SensorKitModel
import SensorStore

/// Turns stored raw columns into SensorKit's units for a batch layout (DESIGN §4): the store keeps
/// what the sensor gave (counts with scale and offset); this applies scale/offset, the mount
/// matrix, m/s² → g, milli-°C → °C, lux and chromaticity. Pure; one mapper per stream, built from
/// the stream's descriptor once and reused for every block.
struct SampleMapper {
    let layout: BatchLayout
    private let schema: SampleSchema
    private let columnIndex: [String: Int]
    private let matrix: MountMatrix
    private let placement: Double
    /// Accelerometers are m/s² in IIO and g in CoreMotion; gyroscopes are rad/s in both.
    private let motionDivisor: Double

    enum MappingError: Error, CustomStringConvertible {
        case missingColumn(String, stream: String)
        var description: String {
            switch self {
            case .missingColumn(let name, let stream): return "stream \(stream) has no column '\(name)' for its sensor's layout"
            }
        }
    }

    init(descriptor: StreamDescriptor, layout: BatchLayout) throws {
        self.layout = layout
        schema = descriptor.schema
        motionDivisor = descriptor.sensor == .accelerometer ? UnitConversion.standardGravity : 1
        columnIndex = Dictionary(descriptor.schema.columns.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { a, _ in a })
        if case .string(let text) = descriptor.source["mountMatrix"], let parsed = try? MountMatrix(parsing: text) {
            matrix = parsed
        } else {
            matrix = .identity
        }
        switch descriptor.source["placement"] {
        case .integer(let value)?: placement = Double(value)
        case .string(let text)?: placement = Int(text).map(Double.init) ?? 0   // source details are strings
        default: placement = 0
        }
        let required: [String]
        switch layout {
        case .motion: required = ["x", "y", "z"]
        case .pressure: required = ["pressure"]
        case .pedometer: required = ["steps", "end"]
        default: required = []
        }
        for name in required where columnIndex[name] == nil {
            throw MappingError.missingColumn(name, stream: "\(descriptor.sensor.rawValue)@\(descriptor.device)")
        }
    }

    /// Physical values (SI as the source defines them) of a column, or nil if the stream lacks it.
    private func physical(_ name: String, _ block: SampleBlock, _ range: Range<Int>) -> [Double]? {
        guard let index = columnIndex[name] else { return nil }
        let raw = block.rawColumn(index)
        let base = raw.startIndex
        switch schema.columns[index] {
        case .integer(_, let scale, let offset, _):
            return range.map { Double(raw[base + $0]) * scale + offset }
        case .float:
            return range.map { Double(bitPattern: UInt64(bitPattern: raw[base + $0])) }
        }
    }

    /// The layout's columns for samples `range` of `block`.
    func columns(_ block: SampleBlock, _ range: Range<Int>) -> [[Double]] {
        let n = range.count
        switch layout {
        case .motion:
            let x = physical("x", block, range)!, y = physical("y", block, range)!, z = physical("z", block, range)!
            var out: [[Double]] = [[Double](repeating: 0, count: n), [Double](repeating: 0, count: n), [Double](repeating: 0, count: n)]
            let divisor = motionDivisor
            for i in 0..<n {
                let v = matrix.apply(SIMD3(x[i], y[i], z[i]))
                out[0][i] = v.x / divisor
                out[1][i] = v.y / divisor
                out[2][i] = v.z / divisor
            }
            return out
        case .pressure:
            let pressure = physical("pressure", block, range)!
            let temperature = physical("temperature", block, range)
            return [pressure, temperature.map { $0.map(UnitConversion.celsius(fromMilliCelsius:)) } ?? [Double](repeating: .nan, count: n)]
        case .ambientLight:
            let lux = physical("illuminance", block, range)
            let red = physical("red", block, range), green = physical("green", block, range), blue = physical("blue", block, range)
            var columns: [[Double]] = [[], [], [], [Double](repeating: placement, count: n)]
            for i in 0..<n {
                let reading = LightReading(illuminance: lux?[i], red: red?[i], green: green?[i], blue: blue?[i])
                columns[0].append(reading.lux ?? .nan)
                columns[1].append(reading.chromaticity.x)
                columns[2].append(reading.chromaticity.y)
            }
            return columns
        case .pedometer:
            // "end" holds the interval's end as boot-clock ns of the same boot: SR ns = anchor + it.
            let end = block.rawColumn(columnIndex["end"]!)
            let ends = range.map { Double(end[end.startIndex + $0] &+ block.bootAnchor) }
            return [ends, physical("steps", block, range)!]
        default:
            // BLE layouts (heart rate, wrist, ECG, PPG) store their columns already in SensorKit
            // units under the layout's own names.
            return layout.columns.map { physical($0, block, range) ?? [Double](repeating: .nan, count: n) }
        }
    }
}
