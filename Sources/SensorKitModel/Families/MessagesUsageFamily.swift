/// Text messages per interval from ModemManager (docs/modem.md): one row per interval, timed at
/// its end, holding counts only — never a number or a text.
public enum MessagesUsageFamily: SensorFamily {
    /// The stored and the wire columns alike.
    public enum Column: String, FamilyColumn {
        /// The interval's length: s on the wire, stored as ns.
        case duration
        case incomingMessages, outgoingMessages
        /// Distinct remote parties of the interval's messages.
        case uniqueContacts
    }
    public typealias Stored = Column
    public typealias Wire = Column

    public static let layout = BatchLayout.messagesUsage
    public static let sensors: [SRSensor] = [.messagesUsageReport]
    public static let isLinear = true

    /// How each stored column reads.
    public static func kind(_ column: Stored) -> ColumnKind {
        switch column {
        case .duration: .count(scale: 1e-9, offset: 0, unit: "s")
        case .incomingMessages, .outgoingMessages, .uniqueContacts: .count("count")
        }
    }

    public static func mapping(_ stream: StoredStream<Stored>) throws(MissingStoredColumn) -> StoredMapping<Stored, Wire> {
        for column in Stored.allCases { _ = try stream.require(column) }
        return .linear(stream.copies())
    }

    public static func results<Results: FetchResultBuilder>(_ batch: FamilyBatch<Wire>, into results: inout Results) {
        let (duration, incoming, outgoing) = (batch[.duration], batch[.incomingMessages], batch[.outgoingMessages])
        let contacts = batch[.uniqueContacts]
        results.each { i in
            SRMessagesUsageReport(
                duration: PhoneUsageFamily.seconds(duration[i]), totalOutgoingMessages: KeyboardMetricsFamily.count(outgoing[i]),
                totalIncomingMessages: KeyboardMetricsFamily.count(incoming[i]),
                totalUniqueContacts: KeyboardMetricsFamily.count(contacts[i]))
        }
    }
}
