/// The bounds of one connection. Everything a peer or a caller can grow stops at one of these;
/// what passes a bound fails with `DBusError.limitReached` or `.malformed`, never traps.
public struct DBusLimits: Sendable, Equatable {
    /// Values decoded from one message (each element of each container counts once).
    public var valuesPerMessage = 262_144
    /// Bytes of strings, paths and signatures decoded from one message.
    public var textBytesPerMessage = 8 << 20
    /// Container nesting while decoding, variants included (the specification's 64).
    public var depth = 64
    /// Calls sent and not yet answered: the system bus's own `max_replies_per_connection`, so
    /// the caller meets this clear error before the broker's `LimitsExceeded`.
    public var pendingCalls = 128
    /// Requests from other threads waiting for the bus thread.
    public var queuedRequests = 1024
    /// Signal subscriptions at once (the system bus allows 512 match rules per connection).
    public var subscriptions = 256
    /// Signals handed to one subscriber's queue and not yet handled; more are counted as lost.
    public var queuedSignalsPerSubscriber = 1024
    /// Longest call timeout accepted, in microseconds (a larger request is clamped).
    public var maximumTimeoutMicroseconds: UInt64 = 300_000_000

    public init() {}
}
