import Foundation
import SensorKitModel
import Synchronization

/// What a live subscription (docs/protocol.md §3.9) hands its handler, in the order it arrived.
public enum LiveDelivery: Sendable {
    /// The subscription is in place; `notice` says when nothing records the sensor yet.
    case subscribed(notice: String?)
    /// Samples as the daemon recorded them, in the layout and values a fetch returns.
    case batch(SampleBatchFrame)
    /// The source lost data over `missed` (`reason` is its `SRDeletionReason`).
    case gap(WireMissed)
    /// The end: `ok` when the source stopped (`notice` says why), or an error — 111 `overrun`
    /// with `missed`, the range to fetch; 108 after `cancel`; 1 when consent was revoked.
    case ended(WireReply)
}

extension ReaderConnection {
    /// Subscribes to `sensor`'s batches as they are recorded (released data only: the daemon
    /// refuses a sensor with a hold). `handler` runs on the connection's delivery thread, one
    /// delivery at a time; each batch is acknowledged when the handler returns, so a slow handler
    /// slows the flow down to its own pace until the daemon's buffer for it fills (then
    /// `.ended` with 111 and what was missed) — the client never buffers without bound. Returns
    /// the request id, for `notify(.cancel, target:)`.
    @discardableResult
    public func subscribe(
        sensor: SRSensor, device: String = SRDevice.hostIdentifier, window: Int = WireLimits.defaultFetchWindow,
        _ handler: @escaping @Sendable (LiveDelivery) -> Void
    ) -> UInt32 {
        // The `subscribed` event may arrive before `send` returns the id: events wait here until it is known.
        let routing = Mutex<(id: UInt32?, early: [WireReply])>((nil, []))
        let forward: @Sendable (WireReply) -> Void = { event in
            switch event.event {
            case WireReply.Event.subscribed.rawValue: handler(.subscribed(notice: event.notice))
            case WireReply.Event.gap.rawValue: if let missed = event.missed { handler(.gap(missed)) }
            default: break
            }
        }
        let token = onEvent { event in
            guard let target = event.target else { return }
            let known = routing.withLock { routing -> UInt32? in
                if routing.id == nil { routing.early.append(event) }
                return routing.id
            }
            if known == target { forward(event) }
        }
        let id = send(
            {
                $0.sensor = sensor.rawValue
                $0.device = device
                $0.window = window
            }, op: .subscribe
        ) { [self] incoming in
            switch incoming {
            case .batch(let batch):
                handler(.batch(batch))
                notify(.ack, target: batch.requestID, batches: 1)
            case .reply(let reply):
                removeEventHandler(token)
                handler(.ended(reply))
            }
        }
        let early = routing.withLock { routing in
            routing.id = id
            return routing.early.filter { $0.target == id }
        }
        for event in early { forward(event) }
        return id
    }
}
