import Foundation
import SensorKitModel

/// What waits for a person's answer in one app, as a `consentPending` event says it
/// (docs/protocol.md §3.10).
public struct PendingConsent: Sendable, Hashable {
    /// The app's bundle id.
    public var app: String
    /// The sensors the app asked for (`requestAuthorization`) that nobody has decided yet; empty
    /// once every request is answered.
    public var sensors: [SRSensor]

    public init(app: String, sensors: [SRSensor]) {
        self.app = app
        self.sensors = sensors
    }
}

extension ReaderConnection {
    /// Asks to be told whenever what an app waits for changes (admin sessions of root and of an
    /// app's Consenters; one watch per connection). `handler` first gets one call per app that
    /// waits for an answer now, then one per change, on the connection's delivery thread; events
    /// are folded together while the handler or the socket is slow, each saying what waits at the
    /// time it was sent. Returns the daemon's reply: an error (104 for a uid that answers for no
    /// app, 103 over the limits) means no watch, and the handler is never called.
    @discardableResult
    public func watchConsent(_ handler: @escaping @Sendable (PendingConsent) -> Void) -> WireReply {
        let token = onEvent { event in
            guard event.event == WireReply.Event.consentPending.rawValue, let app = event.app else { return }
            handler(PendingConsent(app: app, sensors: (event.sensors ?? []).map(SRSensor.init(rawValue:))))
        }
        let reply = call(.watchConsent)
        if reply.error != nil { removeEventHandler(token) }
        return reply
    }
}
