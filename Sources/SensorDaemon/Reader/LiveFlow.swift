import SensorKitModel

/// What one live subscription does next (docs/protocol.md §3.9), without sockets or the
/// pipeline: each event returns the actions `LiveSubscription` executes. `Batch` is a frame
/// ready to send (`EncodedBatch` in the daemon).
///
/// Rules: credit never exceeds the window, one frame in the socket at a time (as a fetch); what
/// the source hands over meanwhile waits in a buffer of at most `maxBuffered` batches. A batch
/// that finds the buffer full ends the subscription with 111 `overrun` and, in `missed`, the
/// range of every sample it buffered or was offered and never sent: memory stays bounded
/// whatever the subscriber does, and it knows exactly what to fetch to fill the hole.
struct LiveFlow<Batch: Sendable>: Sendable {
    /// A batch waiting for credit, with what the subscriber must be told if it is dropped.
    struct Offer: Sendable {
        var batch: Batch
        var count: Int
        /// First and last sensor time (SR ns) of the batch.
        var first: Int64
        var last: Int64
        var bytes: Int
    }

    enum Event: Sendable {
        /// The subscription is registered with the feed: tell the client (`notice`: why nothing may come yet).
        case start(notice: String?)
        /// The source recorded a batch.
        case offered(Offer)
        /// The frame of the last `.send` is completely in the socket.
        case written
        /// The client acknowledged `batches` frames (its number, unchecked).
        case acknowledged(batches: Int)
        case cancelled(silently: Bool)
        /// The app lost its right to the data: the subscription ends with `error`.
        case revoked(WireError)
        /// The source stopped recording (no stakes left, unplugged, the daemon stopping).
        case sourceStopped(String)
        /// The source lost data (`missed` with its reason): told at once, ahead of buffered batches.
        case gap(WireMissed)
    }

    enum Action: Sendable {
        case send(Batch)
        /// Send this message (the `subscribed` event, the final reply).
        case reply(WireReply)
        /// The subscription is over: unregister it.
        case finish
    }

    let requestID: UInt32
    let sensor: String
    let device: String
    let window: Int
    let maxBuffered: Int
    let maxBufferedBytes: Int
    private(set) var credit: Int
    private var bufferedBytes = 0
    private(set) var buffered: [Offer] = []
    private var writing = false
    private(set) var sent = 0
    private(set) var isFinished = false

    init(requestID: UInt32, sensor: String, device: String, window: Int, maxBuffered: Int, maxBufferedBytes: Int) {
        self.requestID = requestID
        self.sensor = sensor
        self.device = device
        self.window = max(1, window)
        self.maxBuffered = max(1, maxBuffered)
        self.maxBufferedBytes = max(1, maxBufferedBytes)
        self.credit = self.window
    }

    mutating func on(_ event: Event) -> [Action] {
        guard !isFinished else { return [] }  // late batches and written frames after the end
        switch event {
        case .start(let notice):
            var started = WireReply(event: WireReply.Event.subscribed.rawValue)
            started.target = requestID
            started.sensor = sensor
            started.notice = notice
            return [.reply(started)]
        case .offered(let offer):
            guard offer.count > 0 else { return [] }
            guard buffered.count < maxBuffered, bufferedBytes.addingSaturating(offer.bytes) <= maxBufferedBytes else {
                return overrun(adding: offer)
            }
            buffered.append(offer)
            bufferedBytes = bufferedBytes.addingSaturating(offer.bytes)
            return sendIfPossible()
        case .written:
            writing = false
            return sendIfPossible()
        case .acknowledged(let batches):
            credit = min(window, credit.addingSaturating(max(0, batches)))
            return sendIfPossible()
        case .cancelled(let silently):
            return finish(
                silently
                    ? nil
                    : .failure(requestID, WireError(.cancelled, "subscription cancelled by the client after \(sent) samples")))
        case .revoked(let error):
            return finish(.failure(requestID, error))
        case .gap(let missed):
            var event = WireReply(event: WireReply.Event.gap.rawValue)
            event.target = requestID
            event.sensor = sensor
            event.missed = missed
            return [.reply(event)]
        case .sourceStopped(let why):
            // What was buffered is dropped with the end: tell the client which samples, so a
            // fetch gets them, rather than hold the end back for a client that may not read.
            var done = WireReply(id: requestID, ok: true)
            done.count = sent
            done.notice = "the subscription ended: \(why)"
            done.missed = missedRange(buffered)
            return finish(done)
        }
    }

    private mutating func sendIfPossible() -> [Action] {
        guard !writing, credit > 0, !buffered.isEmpty else { return [] }
        let next = buffered.removeFirst()
        bufferedBytes -= next.bytes
        credit -= 1
        writing = true
        sent = sent.addingSaturating(next.count)
        return [.send(next.batch)]
    }

    private mutating func overrun(adding offer: Offer) -> [Action] {
        let missed = missedRange(buffered + [offer])
        let samples = missed?.samples ?? 0
        let error = WireError(
            .overrun,
            "the subscriber fell more than \(maxBuffered) batches or \(maxBufferedBytes) bytes behind; the subscription ended after \(sent) samples, \(samples) were not sent (fetch the range in 'missed')"
        )
        var reply = WireReply.failure(requestID, error)
        reply.missed = missed
        return finish(reply)
    }

    /// The fetch range `(from, to]` holding every sample of `offers`.
    private func missedRange(_ offers: [Offer]) -> WireMissed? {
        guard let low = offers.map(\.first).min(), let high = offers.map(\.last).max() else { return nil }
        let samples = offers.reduce(0) { $0.addingSaturating($1.count) }
        return WireMissed(sensor: sensor, device: device, from: low.subtractingSaturating(1), to: high, samples: samples)
    }

    private mutating func finish(_ final: WireReply?) -> [Action] {
        isFinished = true
        buffered = []
        bufferedBytes = 0
        return (final.map { [Action.reply($0)] } ?? []) + [.finish]
    }
}
