/// A decoded signal (or reply) with its header fields. Header strings come from the bus and
/// were checked by sd-bus against the specification's name rules.
public struct DBusMessage: Sendable, Equatable {
    public var sender: String?
    public var path: DBusObjectPath?
    public var interface: String?
    public var member: String?
    public var arguments: [DBusValue]

    public init(sender: String?, path: DBusObjectPath?, interface: String?, member: String?, arguments: [DBusValue]) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }
}

/// What a subscriber's handler receives.
public enum DBusSignalEvent: Sendable, Equatable {
    case signal(DBusMessage)
    /// Signals that matched but were not delivered: the subscriber's queue was full
    /// (`DBusLimits.queuedSignalsPerSubscriber`) or the signal broke a decoding bound. Reported
    /// once the queue has drained, so the subscriber can re-read the state it mirrors.
    case lost(Int)
    /// The connection ended; no more events follow.
    case ended
}

/// A signal match rule (`type='signal'` plus the fields given). Values are quoted by the
/// specification's rule (a `'` becomes `'\''`), so no caller-supplied text can add a clause.
public struct DBusMatch: Sendable, Hashable {
    public var sender: String?
    public var path: DBusObjectPath?
    public var interface: String?
    public var member: String?
    /// `arg0='…'`: the first argument, when it is a string (NameOwnerChanged's name, say).
    public var arg0: String?

    public init(
        sender: String? = nil, path: DBusObjectPath? = nil, interface: String? = nil, member: String? = nil,
        arg0: String? = nil
    ) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.arg0 = arg0
    }

    public var rule: String {
        var clauses = ["type='signal'"]
        if let sender { clauses.append("sender=" + Self.quoted(sender)) }
        if let path { clauses.append("path=" + Self.quoted(path.rawValue)) }
        if let interface { clauses.append("interface=" + Self.quoted(interface)) }
        if let member { clauses.append("member=" + Self.quoted(member)) }
        if let arg0 { clauses.append("arg0=" + Self.quoted(arg0)) }
        return clauses.joined(separator: ",")
    }

    static func quoted(_ value: String) -> String {
        "'" + value.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
