/// One column a sensor family knows by identity: a case of the family's `Stored` or `Wire` enum,
/// named by its raw value (the name kept in a stream's schema, or the name docs/protocol.md §5.2
/// gives a batch column). Code refers to columns by these cases only, so a column renamed or
/// removed fails to compile where it is used.
public protocol FamilyColumn: RawRepresentable, CaseIterable, Hashable, Sendable
where RawValue == String, AllCases == [Self] {}

extension FamilyColumn {
    /// The column's position in `allCases` (for a `Wire` enum, its position in the batch).
    public var ordinal: Int { Self.allCases.firstIndex(of: self)! }

    /// Every column's name, in declaration order.
    public static var names: [String] { allCases.map(\.rawValue) }
}

/// What every batch layout has: its wire columns and how a client turns a batch into samples.
/// One conforming type per layout, in `Families/` (docs/architecture.md "Sensor families").
public protocol BatchFamily: Sendable {
    /// The batch's columns in wire order (docs/protocol.md §5.2).
    associatedtype Wire: FamilyColumn
    static var layout: BatchLayout { get }
    /// The sensors whose fetches use this layout.
    static var sensors: [SRSensor] { get }
    /// Builds a fetched batch's results as Apple delivers them.
    static func results<Results: FetchResultBuilder>(_ batch: FamilyBatch<Wire>, into results: inout Results)
    /// The most ragged values (docs/protocol.md §5) one sample of this layout carries.
    static var maxRaggedValuesPerSample: Int { get }
}

extension BatchFamily {
    public static var maxRaggedValuesPerSample: Int { 0 }
}

/// A layout recorded from streams of stored columns: what the stream's schema holds and how the
/// daemon turns it into the layout's columns in SensorKit units.
public protocol SensorFamily: BatchFamily {
    /// The columns a stream of this family stores, by the names kept in its schema.
    associatedtype Stored: FamilyColumn
    /// Whether `mapping` is always `.linear` (then a stored chunk may be handed to a client that
    /// maps it itself, docs/protocol.md §5.3).
    static var isLinear: Bool { get }
    /// The mapping of one stream; throws when the stream lacks a column the family needs.
    static func mapping(_ stream: StoredStream<Stored>) throws(MissingStoredColumn) -> StoredMapping<Stored, Wire>
    /// How many ragged values the stored samples carry (the frame is sized with it before the
    /// mapping fills them in); 0 for families without ragged values.
    static func raggedCount(_ stored: StoredValues<Stored>) -> Int
}

extension SensorFamily {
    public static func raggedCount(_ stored: StoredValues<Stored>) -> Int { 0 }
}

/// How a family maps one stream's stored values into its wire columns.
public enum StoredMapping<Stored: FamilyColumn, Wire: FamilyColumn>: Sendable {
    /// Every wire column is linear in the stored ones: the fast path, shared with the client.
    case linear(ColumnMapping)
    /// Sample by sample (light, pressure, pedometer, heart rate).
    case perSample(@Sendable (StoredValues<Stored>, WireColumns<Wire>) -> Void)
}

/// A stream lacks a column its family needs, or holds one — or a detail, like its mount matrix —
/// that the family cannot read: its samples are refused rather than mapped by a guess.
public struct MissingStoredColumn: Error, Hashable, Sendable {
    /// The column's (or the detail's) name.
    public let column: String
    /// Why what is there cannot be used; nil when it is missing.
    public let problem: String?
    public init(column: String, problem: String? = nil) {
        self.column = column
        self.problem = problem
    }
}

/// One stream as a family sees it: where each of its stored columns is in the stream's schema,
/// how each is read, and the stream's recorded details (mount matrix, placement).
public struct StoredStream<Key: FamilyColumn>: Sendable {
    public let sensor: SRSensor
    /// How every stored column of the stream is read, in schema order (also the ones the family
    /// does not know).
    public let sources: [ColumnMapping.Source]
    /// The stream's source details, as text (`mountMatrix`, `placement`).
    public let details: [String: String]
    private let positions: [Key: Int]

    /// `names[i]` is the schema name of stored column i, read as `sources[i]`.
    public init(sensor: SRSensor, names: [String], sources: [ColumnMapping.Source], details: [String: String]) {
        precondition(names.count == sources.count)
        self.sensor = sensor
        self.sources = sources
        self.details = details
        var positions: [Key: Int] = [:]
        for (index, name) in names.enumerated() {
            if let key = Key(rawValue: name), positions[key] == nil { positions[key] = index }
        }
        self.positions = positions
    }

    /// Where `column` is in the stream's schema, or nil when the stream has none.
    public func position(_ column: Key) -> Int? { positions[column] }

    /// Where `column` is; throws when the stream has none.
    public func require(_ column: Key) throws(MissingStoredColumn) -> Int {
        guard let position = positions[column] else { throw MissingStoredColumn(column: column.rawValue) }
        return position
    }
}

/// Stored values of one stream over a run of samples, valid only inside the mapping's call.
public struct StoredValues<Key: FamilyColumn> {
    public let stream: StoredStream<Key>
    /// Every stored column, `count` values each (counts, or `Double.bitPattern`s of float columns).
    public let stored: [UnsafeBufferPointer<Int64>]
    public let count: Int
    /// The SR nanosecond at which the samples' boot's `CLOCK_BOOTTIME` read zero.
    public let bootAnchor: Int64

    public init(stream: StoredStream<Key>, stored: [UnsafeBufferPointer<Int64>], count: Int, bootAnchor: Int64) {
        precondition(stored.count == stream.sources.count && stored.allSatisfy { $0.count >= count })
        self.stream = stream
        self.stored = stored
        self.count = count
        self.bootAnchor = bootAnchor
    }

    /// A column's values as stored, or nil when the stream has none.
    public func raw(_ column: Key) -> UnsafeBufferPointer<Int64>? {
        stream.position(column).map { stored[$0] }
    }

    /// A column's physical values (counts × scale + offset, float columns bit for bit), or nil
    /// when the stream has none.
    public func physical(_ column: Key) -> PhysicalValues? {
        stream.position(column).map { PhysicalValues(values: stored[$0], source: stream.sources[$0]) }
    }
}

/// One stored column read as physical values.
public struct PhysicalValues {
    let values: UnsafeBufferPointer<Int64>
    let source: ColumnMapping.Source

    @inline(__always) public subscript(i: Int) -> Double {
        let stored = values[i]
        return source.isFloat ? Double(bitPattern: UInt64(bitPattern: stored)) : Double(stored) * source.scale + source.offset
    }

    /// Writes the first `column.count` values to `column`.
    public func write(to column: WireColumn<Double>) {
        for i in 0..<column.count { column[i] = self[i] }
    }
}

/// The wire columns of a batch being built, by the family's `Wire` cases.
public struct WireColumns<Key: FamilyColumn> {
    public let sections: BatchFrameSections

    public init(_ sections: BatchFrameSections) {
        precondition(sections.columnCount == Key.allCases.count)
        self.sections = sections
    }

    public subscript(column: Key) -> WireColumn<Double> { sections.column(column.ordinal) }
}

extension StoredStream {
    /// Each column as the stored column of the same name (NaN where the stream has none): the
    /// mapping of families whose streams store SensorKit units under the wire names
    /// (`Stored == Wire`).
    public func copies() -> ColumnMapping {
        ColumnMapping(sources: sources, outputs: Key.allCases.map { column in position(column).map { .copy($0) } ?? .missing })
    }
}
