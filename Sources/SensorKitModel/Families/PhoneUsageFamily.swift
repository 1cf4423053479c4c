/// Phone calls per interval from ModemManager (docs/modem.md): one row per interval, timed at its
/// end, holding counts and durations only — never a number. Stored in SensorKit units' counts
/// under the wire names, so the mapping is a linear copy.
public enum PhoneUsageFamily: SensorFamily {
    /// The stored and the wire columns alike.
    public enum Column: String, FamilyColumn {
        /// The interval's length: s on the wire, stored as ns.
        case duration
        case incomingCalls, outgoingCalls
        /// Time calls were connected (active or held) inside the interval: s, stored as ns.
        case callDuration
        /// Distinct remote parties of the interval's calls.
        case uniqueContacts
    }
    public typealias Stored = Column
    public typealias Wire = Column

    public static let layout = BatchLayout.phoneUsage
    public static let sensors: [SRSensor] = [.phoneUsageReport]
    public static let isLinear = true

    /// How each stored column reads.
    public static func kind(_ column: Stored) -> ColumnKind {
        switch column {
        case .duration, .callDuration: .count(scale: 1e-9, offset: 0, unit: "s")
        case .incomingCalls, .outgoingCalls, .uniqueContacts: .count("count")
        }
    }

    public static func mapping(_ stream: StoredStream<Stored>) throws(MissingStoredColumn) -> StoredMapping<Stored, Wire> {
        for column in Stored.allCases { _ = try stream.require(column) }
        return .linear(stream.copies())
    }

    public static func results<Results: FetchResultBuilder>(_ batch: FamilyBatch<Wire>, into results: inout Results) {
        let (duration, incoming, outgoing) = (batch[.duration], batch[.incomingCalls], batch[.outgoingCalls])
        let (calls, contacts) = (batch[.callDuration], batch[.uniqueContacts])
        results.each { i in
            SRPhoneUsageReport(
                duration: seconds(duration[i]), totalOutgoingCalls: KeyboardMetricsFamily.count(outgoing[i]),
                totalIncomingCalls: KeyboardMetricsFamily.count(incoming[i]),
                totalUniqueContacts: KeyboardMetricsFamily.count(contacts[i]), totalPhoneCallDuration: seconds(calls[i]))
        }
    }

    /// A stored duration as seconds: a damaged store's NaN or negative value reads 0.
    static func seconds(_ value: Double) -> Double { value.isFinite && value > 0 ? value : 0 }
}
