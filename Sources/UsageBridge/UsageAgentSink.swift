/// Where the reader socket hands a trusted session agent's events (the device-usage driver's
/// discovery): the daemon trusts an agent only for the uid of seat0's active local session.
public protocol UsageAgentSink: Sendable {
    /// The uid of seat0's active local session now, as logind last said; nil when there is none
    /// or logind cannot be asked.
    var activeUser: UInt32? { get }
    func feed(_ event: UsageEvent)
}
