import Dispatch
import Synchronization

/// Runs a connection's deliveries in arrival order, one at a time, while the slow ones — decoding
/// a `chunk` frame — are prepared in parallel on other threads. An item is numbered when it
/// arrives; its delivery runs once it and everything before it are ready, on whichever thread
/// made the last of them ready. With nothing being prepared, a delivery runs at once on the
/// arriving (read) thread.
final class OrderedDelivery: Sendable {
    private struct State {
        var nextNumber = 0
        var nextToDeliver = 0
        var ready: [Int: @Sendable () -> Void] = [:]
        var delivering = false
    }

    private let state = Mutex(State())
    private let workers: DispatchQueue

    init(label: String) {
        workers = DispatchQueue(label: label, attributes: .concurrent)
    }

    /// Delivers `action` after everything that arrived before it.
    func deliver(_ action: @escaping @Sendable () -> Void) {
        let number = state.withLock { state -> Int in
            defer { state.nextNumber += 1 }
            return state.nextNumber
        }
        ready(number, action)
    }

    /// Runs `prepare` on a worker now, and the delivery it returns in arrival order.
    func prepare(_ prepare: @escaping @Sendable () -> @Sendable () -> Void) {
        let number = state.withLock { state -> Int in
            defer { state.nextNumber += 1 }
            return state.nextNumber
        }
        workers.async { self.ready(number, prepare()) }
    }

    private func ready(_ number: Int, _ action: @escaping @Sendable () -> Void) {
        let mayDeliver = state.withLock { state -> Bool in
            state.ready[number] = action
            guard !state.delivering else { return false }
            state.delivering = true
            return true
        }
        guard mayDeliver else { return }
        while true {
            let due = state.withLock { state -> [@Sendable () -> Void] in
                var due: [@Sendable () -> Void] = []
                while let next = state.ready.removeValue(forKey: state.nextToDeliver) {
                    due.append(next)
                    state.nextToDeliver += 1
                }
                if due.isEmpty { state.delivering = false }
                return due
            }
            if due.isEmpty { return }
            for action in due { action() }
        }
    }
}
