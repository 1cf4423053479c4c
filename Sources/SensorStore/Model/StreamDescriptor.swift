import Foundation
import SensorChunks
import SensorKitModel

/// A JSON value, for the free-form identity of a sample source (chip name, udev path, mount
/// matrix, sampling rate, clock mapping). Whole numbers decode as `.integer`.
public enum MetadataValue: Hashable, Sendable, Codable {
    case string(String)
    case integer(Int64)
    case number(Double)
    case bool(Bool)
    case array([MetadataValue])
    case object([String: MetadataValue])
    case null

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([MetadataValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: MetadataValue].self))
        }
    }

    /// Whole numbers as `.integer`, recursively: the form a value has after a trip through JSON.
    public var normalized: MetadataValue {
        switch self {
        case .number(let value) where value == value.rounded() && abs(value) < 9.2e18: .integer(Int64(value))
        case .array(let values): .array(values.map(\.normalized))
        case .object(let values): .object(values.mapValues(\.normalized))
        default: self
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        case .null: try container.encodeNil()
        }
    }
}

/// Where a stream's samples come from, as free-form metadata: for an IIO chip its name, udev
/// path, mount matrix and sampling rate; for a wearable its clock mapping. Stored as JSON.
public typealias SourceIdentity = [String: MetadataValue]

/// One column of a stream's samples.
public enum SampleColumn: Hashable, Sendable, Codable {
    /// Raw integer counts as the sensor gave them, stored losslessly; the physical value is
    /// `Double(count) * scale + offset` in `unit` (IIO's `(raw + offset) * scale` folds into this).
    case integer(name: String, scale: Double, offset: Double, unit: String)
    /// A Float64 stored bit-exactly (NaN payloads and signed zeros included).
    case float(name: String, unit: String)
    /// An instant: appended as `CLOCK_BOOTTIME` ns of the batch's boot, stored and read as SR ns,
    /// converted with the boot's anchor exactly as sample times are (an ECG session's start).
    case instant(name: String)

    /// The column's name ("x", "lux", …).
    public var name: String {
        switch self {
        case .integer(let name, _, _, _), .float(let name, _), .instant(let name): name
        }
    }

    /// True for `.instant` columns.
    public var isInstant: Bool {
        if case .instant = self { return true }
        return false
    }

    /// True for `.float` columns.
    public var isFloat: Bool {
        if case .float = self { return true }
        return false
    }
}

/// The ordered, fixed set of value columns every sample of a stream has.
public struct SampleSchema: Hashable, Sendable, Codable {
    /// The columns in order; every sample has exactly one value per column.
    public var columns: [SampleColumn]
    public init(_ columns: [SampleColumn]) { self.columns = columns }
}

/// What identifies a stream: one sensor on one device from one source, with one sample layout.
/// Registering an equal descriptor again yields the same `StreamID`. Source metadata is compared
/// after `MetadataValue.normalized` (a whole `.number` equals the `.integer`), as JSON keeps it.
public struct StreamDescriptor: Hashable, Sendable, Codable {
    /// The SensorKit sensor the samples belong to.
    public var sensor: SRSensor
    /// `SRDevice.identifier`: "host" for this machine, "ble:AA:BB:…" for a wearable.
    public var device: String
    /// Which chip or wearable produced the samples, and how (free-form JSON).
    public var source: SourceIdentity
    /// The value columns of every sample.
    public var schema: SampleSchema

    public init(sensor: SRSensor, device: String = SRDevice.hostIdentifier, source: SourceIdentity = [:], schema: SampleSchema) {
        self.sensor = sensor
        self.device = device
        self.source = source
        self.schema = schema
    }

    /// The descriptor as it reads back from the catalog (source metadata normalized).
    var normalized: StreamDescriptor {
        var copy = self
        copy.source = source.mapValues(\.normalized)
        return copy
    }

    /// Canonical JSON (sorted keys, normalized metadata): the registration key.
    func canonicalJSON() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain values cannot fail; a failure would be a bug in this type.
        let data = try! encoder.encode(normalized)
        return String(decoding: data, as: UTF8.self)
    }

    static func fromJSON(_ text: String) throws -> StreamDescriptor {
        try JSONDecoder().decode(StreamDescriptor.self, from: Data(text.utf8))
    }

    /// The codec role of each value column.
    var columnRoles: [ColumnRole] { schema.columns.map { $0.isFloat ? .float : .integer } }

    /// The positions of the `.instant` columns, which the writer shifts with the sample times.
    var instantColumns: [Int] { schema.columns.indices.filter { schema.columns[$0].isInstant } }
}

/// A stream's identity inside one store (the catalog's row id).
public struct StreamID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: Int64
    public init(rawValue: Int64) { self.rawValue = rawValue }
    public static func < (lhs: StreamID, rhs: StreamID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "stream \(rawValue)" }
}

/// A stream registered in the catalog: its id and descriptor (not `StoredStream<Key>`, which is one
/// stream as a sensor family reads its columns).
public struct RegisteredStream: Hashable, Sendable {
    /// The catalog id.
    public let id: StreamID
    /// The descriptor as stored (source metadata normalized).
    public let descriptor: StreamDescriptor
}
