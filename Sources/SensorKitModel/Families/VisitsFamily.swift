import Foundation

/// Visits to significant places, handed to the daemon by the session agent (docs/visits.md): one
/// row per visit, timed at the moment the daemon took it, holding only `SRVisit`'s fields — never
/// a coordinate. The four interval bounds are ages, seconds before the row's own time, so the
/// daemon's clock alone places them; the identifier is four 32-bit words, because a 64-bit half
/// would not survive the wire's doubles. Stored under the wire names, mapped as a linear copy.
public enum VisitsFamily: SensorFamily {
    /// The stored and the wire columns alike.
    public enum Column: String, FamilyColumn {
        /// Metres from home, whole; −1 while no home is known.
        case distance
        /// The arrival's and the departure's bounds: s before the sensor time (stored as ms);
        /// `arrivalStart` −1 when nothing before the visit was observed.
        case arrivalStart, arrivalEnd, departureStart, departureEnd
        /// `SRVisit.LocationCategory` raw value.
        case category
        /// The place's UUID, bytes 0–3, 4–7, 8–11, 12–15 as big-endian 32-bit words.
        case id0, id1, id2, id3

        public static let bounds: [Column] = [.arrivalStart, .arrivalEnd, .departureStart, .departureEnd]
        public static let identifierWords: [Column] = [.id0, .id1, .id2, .id3]
    }
    public typealias Stored = Column
    public typealias Wire = Column

    public static let layout = BatchLayout.visits
    public static let sensors: [SRSensor] = [.visits]
    public static let isLinear = true
    /// The stored value of a bound nothing observed (an arrival from `Date.distantPast`).
    public static let unknownBound: Int64 = -1_000
    /// Half the equator, m: no place on Earth is farther from home (a larger stored distance is unknown).
    public static let maximumDistance: Double = 20_037_509

    /// How each stored column reads.
    public static func kind(_ column: Stored) -> ColumnKind {
        switch column {
        case .distance: .count("m")
        case .arrivalStart, .arrivalEnd, .departureStart, .departureEnd: .count(scale: 1e-3, offset: 0, unit: "s")
        case .category, .id0, .id1, .id2, .id3: .count("count")
        }
    }

    /// The scale of a stored column's counts.
    public static func scale(_ column: Stored) -> Double {
        if case .count(let scale, _, _) = kind(column) { return scale }
        return 1
    }

    public static func mapping(_ stream: StoredStream<Stored>) throws(MissingStoredColumn) -> StoredMapping<Stored, Wire> {
        for column in Stored.allCases { _ = try stream.require(column) }
        return .linear(stream.copies())
    }

    public static func results<Results: FetchResultBuilder>(_ batch: FamilyBatch<Wire>, into results: inout Results) {
        let (t, dates) = (batch.times, batch.dates)
        let (distance, category) = (batch[.distance], batch[.category])
        let bounds = Column.bounds.map { batch[$0] }
        let words = Column.identifierWords.map { batch[$0] }
        results.each { i in
            let at = bounds.map { date(age: $0[i], before: t[i], dates: dates) }
            return SRVisit(
                distanceFromHome: (0...maximumDistance).contains(distance[i]) ? distance[i] : -1,
                arrivalDateInterval: interval(at[0], at[1]), departureDateInterval: interval(at[2], at[3]),
                locationCategory: SRVisit.LocationCategory(rawValue: KeyboardMetricsFamily.count(category[i])) ?? .unknown,
                identifier: identifier(words.map { $0[i] }))
        }
    }

    /// The date `age` seconds before the SR instant `time`; a negative age (nothing observed) is
    /// `Date.distantPast`.
    static func date(age: Double, before time: Int64, dates: SampleDates) -> Date {
        guard age.isFinite, age >= 0 else { return .distantPast }
        let nanoseconds = Int64(exactly: (age * 1e3).rounded()).map { $0.multipliedReportingOverflow(by: 1_000_000) }
        guard let nanoseconds, !nanoseconds.overflow else { return .distantPast }
        return dates.date(time.subtractingSaturating(nanoseconds.partialValue))
    }

    /// An interval between two bounds, in order whatever a damaged store holds (a date that is
    /// not a number, without a boot to convert with, is no interval at all).
    static func interval(_ a: Date, _ b: Date) -> DateInterval {
        guard a <= b || b <= a else { return DateInterval(start: .distantPast, duration: 0) }
        return DateInterval(start: min(a, b), end: max(a, b))
    }

    /// The UUID of four stored words (a damaged word reads 0).
    public static func identifier(_ words: [Double]) -> UUID {
        var bytes = [UInt8](repeating: 0, count: 16)
        for (index, value) in words.prefix(4).enumerated() {
            let word = value.isFinite && value >= 0 && value <= Double(UInt32.max) ? UInt32(value) : 0
            for byte in 0..<4 { bytes[index * 4 + byte] = UInt8(truncatingIfNeeded: word >> (24 - 8 * byte)) }
        }
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9], bytes[10],
                bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }

    /// The four stored words of a UUID.
    public static func words(_ identifier: UUID) -> [Int64] {
        let u = identifier.uuid
        let bytes = [u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15]
        return (0..<4).map { index in
            bytes[(index * 4)..<(index * 4 + 4)].reduce(Int64(0)) { $0 << 8 | Int64($1) }
        }
    }
}
