import Dispatch
import Foundation
import SensorKit
import SensorKitModel

/// The agent's connection to the daemon's reader socket (docs/protocol.md §3.7): an admin
/// session turned agent session with `agent`, then `usage` requests of at most 32 events each,
/// sent in order from a queue of its own (a call waits for its reply). Events wait in a bounded
/// queue while one is in flight; past `maximumQueued` the oldest are dropped and counted.
public final class AgentLink: @unchecked Sendable {
    // @unchecked: `queued`, `dropped` and `sending` are touched only on `queue`.
    public static let maximumQueued = 1_024
    public static let eventsPerRequest = 32
    private let connection: ReaderConnection
    private let queue = DispatchQueue(label: "sensorkit-session.link")
    private var queued: [WireUsageEvent] = []
    private var sending = false
    public private(set) var dropped = 0
    private let onRefused: @Sendable (WireError) -> Void

    /// Connects and asks to be the session's agent; throws when the daemon refuses.
    public init(socketPath: String, onRefused: @escaping @Sendable (WireError) -> Void) throws {
        connection = try ReaderConnection(socketPath: socketPath, app: nil)
        self.onRefused = onRefused
        let reply = connection.call(.agent)
        if let error = reply.error {
            connection.close()
            throw error
        }
    }

    public func close() { connection.close() }

    /// Queues `events` for the daemon.
    public func send(_ events: [WireUsageEvent]) {
        queue.async { [self] in
            queued += events
            if queued.count > Self.maximumQueued {
                dropped += queued.count - Self.maximumQueued
                queued.removeFirst(queued.count - Self.maximumQueued)
            }
            drain()
        }
    }

    private func drain() {
        dispatchPrecondition(condition: .onQueue(queue))
        while !queued.isEmpty {
            let batch = Array(queued.prefix(Self.eventsPerRequest))
            queued.removeFirst(batch.count)
            let reply = connection.call(.usage) { $0.events = batch }
            if let error = reply.error {
                onRefused(error)
                if error.code != .tooManyRequests { return }
            }
        }
    }
}
