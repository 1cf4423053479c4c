/// Phone and message usage over fixed intervals: what the modems reported in, one report (or one
/// unobserved stretch) out per interval that ends. A pure value driven on the recorder's queue
/// with boot-clock times; contacts arrive only as digests (`ContactKey`), never as numbers.
///
/// A call counts (incoming or outgoing, and its contact) in the interval it is first seen in;
/// the time it is connected (active or held) counts in each interval it spans, split at the
/// boundary. A message counts in the interval it completed in (received or sent).
public struct UsageInterval: Hashable, Sendable {
    /// Intervals one close may emit after a long suspend; the rest of the stretch closes as one,
    /// so a wake after days cannot emit unbounded records.
    public static let maximumIntervalsPerClose = 96
    /// Calls followed at once; a hostile bus announcing more is ignored past this.
    public static let maximumLiveCalls = 64
    /// Distinct contacts remembered per interval (each an 8-byte digest); more still count as calls
    /// or messages, and the unique count saturates here.
    public static let maximumContactsPerInterval = 4096

    public let length: Int64
    public private(set) var start: Int64
    public private(set) var end: Int64
    private var phone = PhoneUsage()
    private var messages = MessagesUsage()
    private var callContacts: Set<UInt64> = []
    private var messageContacts: Set<UInt64> = []
    /// Connected-since (boot ns) of each connected call, nil for a call not connected now.
    private var liveCalls: [String: Int64?] = [:]
    private var observable = false
    /// Whether some modem could be observed at some moment of the current interval.
    private var observed = false

    /// Starts at `start` (boot ns); the first interval ends at `firstEnd` (a wall-clock boundary,
    /// `firstEnd(…)`), the next ones `length` ns apart (at least 1 s).
    public init(start: Int64, firstEnd: Int64, length: Int64) {
        self.length = max(1_000_000_000, length)
        self.start = start
        end = max(firstEnd, start)
    }

    /// The boot time of the next wall-clock multiple of `length` after `realtime` (both ns), so
    /// that intervals of 15 minutes end at :00, :15, :30 and :45.
    public static func firstEnd(boot: Int64, realtime: Int64, length: Int64) -> Int64 {
        let length = max(1_000_000_000, length)
        let into = ((realtime % length) + length) % length
        return boot.addingSaturating(length - into)
    }

    /// First closes the intervals that ended at or before `time`, then applies `event` at `time`.
    public mutating func on(_ event: UsageEvent, at time: Int64) -> [UsageAction] {
        let actions = close(upTo: time)
        let now = max(time, start)
        switch event {
        case .observable(let isObservable):
            observable = isObservable
            if isObservable { observed = true } else { endAllCalls(at: now) }
        case let .call(id, direction, state, contact):
            if liveCalls[id] == nil {
                guard liveCalls.count < Self.maximumLiveCalls else { break }
                switch direction {
                case .incoming: phone.incomingCalls.addSaturating(1)
                case .outgoing: phone.outgoingCalls.addSaturating(1)
                case .unknown: break
                }
                if let contact { remember(contact, in: &callContacts) }
                // A call first seen already over (a missed call that ended before it was read) counts too.
                guard state != .terminated else { break }
                liveCalls[id] = .some(nil)
            }
            let since = liveCalls[id]!
            if state.isConnected {
                if since == nil { liveCalls[id] = .some(now) }
            } else {
                if let since { phone.callNanoseconds.addSaturating(now.subtractingSaturating(since)) }
                liveCalls[id] = state == .terminated ? nil : .some(nil)
            }
        case .callGone(let id):
            if let since = liveCalls.removeValue(forKey: id), let since {
                phone.callNanoseconds.addSaturating(now.subtractingSaturating(since))
            }
        case let .message(direction, contact):
            switch direction {
            case .incoming: messages.incomingMessages.addSaturating(1)
            case .outgoing: messages.outgoingMessages.addSaturating(1)
            }
            if let contact { remember(contact, in: &messageContacts) }
        }
        return actions
    }

    /// Closes every interval that ended at or before `now`.
    public mutating func close(upTo now: Int64) -> [UsageAction] {
        var actions: [UsageAction] = []
        var closed = 0
        while end <= now {
            closed += 1
            if closed == Self.maximumIntervalsPerClose {
                actions.append(finish(at: now))
                break
            }
            actions.append(closeCurrent(at: end, next: end.addingSaturating(length)))
        }
        return actions
    }

    /// Closes the current interval early at `now` (recording stops); the next one runs from
    /// there to the next boundary.
    public mutating func finish(at now: Int64) -> UsageAction {
        let at = max(now, start)
        let next = end > at ? end : at.addingSaturating(length)
        return closeCurrent(at: at, next: next)
    }

    private mutating func closeCurrent(at closing: Int64, next: Int64) -> UsageAction {
        for (id, since) in liveCalls {
            if let since {
                phone.callNanoseconds.addSaturating(closing.subtractingSaturating(since))
                liveCalls[id] = .some(closing)
            }
        }
        phone.uniqueContacts = callContacts.count
        messages.uniqueContacts = messageContacts.count
        let action: UsageAction =
            observed || observable
            ? .report(UsageReport(start: start, end: closing, phone: phone, messages: messages))
            : .unobserved(from: start, to: closing)
        phone = PhoneUsage()
        messages = MessagesUsage()
        callContacts = []
        messageContacts = []
        observed = observable
        start = closing
        end = max(next, closing)
        return action
    }

    private mutating func endAllCalls(at now: Int64) {
        for case let (_, since?) in liveCalls {
            phone.callNanoseconds.addSaturating(now.subtractingSaturating(since))
        }
        liveCalls = [:]
    }

    private func remember(_ contact: ContactDigest, in set: inout Set<UInt64>) {
        if set.count < Self.maximumContactsPerInterval { set.insert(contact.value) }
    }
}

/// What the interval accounting is told (`UsageInterval.on`).
public enum UsageEvent: Hashable, Sendable {
    /// Whether some modem can be observed now: ModemManager on the bus with at least one modem.
    case observable(Bool)
    /// A call's current state, by its object path; the first report of a path counts the call.
    case call(String, direction: CallDirection, state: CallState, contact: ContactDigest?)
    /// A call went away without a final state (deleted, its modem vanished, ModemManager left).
    case callGone(String)
    /// A message completed: received, or sent.
    case message(MessageDirection, contact: ContactDigest?)
}

/// What closing an interval produced.
public enum UsageAction: Hashable, Sendable {
    case report(UsageReport)
    /// No modem could be observed at any moment of the interval: a deletion record, not zeros.
    case unobserved(from: Int64, to: Int64)
}

/// One interval's usage, from `start` to `end` (boot ns).
public struct UsageReport: Hashable, Sendable {
    public var start: Int64
    public var end: Int64
    public var phone: PhoneUsage
    public var messages: MessagesUsage

    public init(start: Int64, end: Int64, phone: PhoneUsage, messages: MessagesUsage) {
        self.start = start
        self.end = end
        self.phone = phone
        self.messages = messages
    }
}

public struct PhoneUsage: Hashable, Sendable {
    public var incomingCalls = 0
    public var outgoingCalls = 0
    public var callNanoseconds: Int64 = 0
    public var uniqueContacts = 0

    public init(incomingCalls: Int = 0, outgoingCalls: Int = 0, callNanoseconds: Int64 = 0, uniqueContacts: Int = 0) {
        self.incomingCalls = incomingCalls
        self.outgoingCalls = outgoingCalls
        self.callNanoseconds = callNanoseconds
        self.uniqueContacts = uniqueContacts
    }
}

public struct MessagesUsage: Hashable, Sendable {
    public var incomingMessages = 0
    public var outgoingMessages = 0
    public var uniqueContacts = 0

    public init(incomingMessages: Int = 0, outgoingMessages: Int = 0, uniqueContacts: Int = 0) {
        self.incomingMessages = incomingMessages
        self.outgoingMessages = outgoingMessages
        self.uniqueContacts = uniqueContacts
    }
}

extension Int {
    fileprivate mutating func addSaturating(_ other: Int) {
        let (sum, overflow) = addingReportingOverflow(other)
        self = overflow ? .max : sum
    }
}

extension Int64 {
    fileprivate mutating func addSaturating(_ other: Int64) { self = addingSaturating(other) }
}
