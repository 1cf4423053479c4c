import CSensorLinux
import Dispatch
import Foundation
import Glibc
import Synchronization

/// One thread that sleeps in `epoll_wait` for many non-blocking sockets and runs each socket's
/// handler on the socket's own serial queue when it can be read or written.
///
/// Why not a `DispatchSourceRead` and a `DispatchSourceWrite` per socket: the two sources share
/// the fd inside libdispatch, must be resumed before they are cancelled, and the fd may only be
/// closed once both cancel handlers ran. Clients that connect and leave in a loop made that
/// dance crash libdispatch's manager thread within seconds (docs/reliability.md, "Connection
/// churn"). Here one object owns the descriptor from `watch` to `close`, and there is nothing to
/// suspend, resume or cancel:
/// - interest is one-shot (`EPOLLONESHOT`): one readiness is reported, then nothing until the
///   socket's queue asks again with `want`, so a socket whose reading is paused never wakes
///   anyone, and no two readiness handlers of one socket are ever queued by one arming;
/// - `want([])` takes the socket out of the epoll set (a hang-up would otherwise be reported
///   over and over while nobody reads);
/// - `close` removes the socket from the epoll set and closes its descriptor at once; a
///   readiness taken just before never reaches the handler, because the handler runs on the
///   socket's queue — the queue `close` is called on — and checks first that the socket is
///   still watched. Keys, not descriptor numbers, name sockets, so a number reused by the next
///   connection never gets the last one's events.
public final class SocketPoller: Sendable {
    public struct Interest: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let read = Interest(rawValue: 1)
        public static let write = Interest(rawValue: 2)
    }

    /// What a readiness says: a read, or a write, would now not block (a hang-up or an error
    /// counts as both: the call then reports it).
    public struct Readiness: Sendable, Equatable {
        public let readable: Bool
        public let writable: Bool
    }

    private struct Entry {
        let fd: Int32
        let queue: DispatchQueue
        let handler: @Sendable (Readiness) -> Void
        /// In the epoll set (possibly disabled after its one-shot readiness).
        var registered = false
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var nextKey: UInt64 = 1
    }

    private let epoll: Int32
    private let state = Mutex(State())

    /// The process's poller (its thread lives as long as the process, like libdispatch's manager).
    public static func shared() throws(SystemError) -> SocketPoller { try sharedPoller.get() }
    private static let sharedPoller = Result { () throws(SystemError) -> SocketPoller in try SocketPoller(name: "skd-sockets") }

    /// Starts the thread; `name` is what `ps -L` shows for it.
    init(name: String) throws(SystemError) {
        epoll = try syscall("epoll_create1") { csl_epoll_create() }
        let worker = Thread { [self] in
            _ = csl_name_this_thread(name)
            run()
        }
        worker.start()
    }

    /// A socket handed to the poller: from here on the poller owns `fd` (its `close` closes it).
    public final class Socket: Sendable {
        public let fd: Int32
        fileprivate let key: UInt64
        private let poller: SocketPoller

        fileprivate init(fd: Int32, key: UInt64, poller: SocketPoller) {
            self.fd = fd
            self.key = key
            self.poller = poller
        }

        /// Reports the next readiness for `interest` (once); empty: none. Call on the socket's queue.
        public func want(_ interest: Interest) throws(SystemError) { try poller.want(interest, key: key) }

        /// Stops watching and closes the descriptor. Call on the socket's queue: the handler
        /// does not run after this returns. Idempotent.
        public func close() { poller.close(key: key) }
    }

    /// Takes `fd` (non-blocking) in; `handler` runs on `queue` for each readiness asked for with `want`.
    public func watch(_ fd: Int32, queue: DispatchQueue, handler: @escaping @Sendable (Readiness) -> Void) -> Socket {
        let key = state.withLock { state in
            let key = state.nextKey
            state.nextKey += 1
            state.entries[key] = Entry(fd: fd, queue: queue, handler: handler)
            return key
        }
        return Socket(fd: fd, key: key, poller: self)
    }

    private func want(_ interest: Interest, key: UInt64) throws(SystemError) {
        try state.withLock { (state) throws(SystemError) in
            guard var entry = state.entries[key] else { return }
            if interest.isEmpty {
                guard entry.registered else { return }
                _ = try syscall("epoll_ctl(DEL, \(entry.fd))") { csl_epoll_forget(epoll, entry.fd) }
                entry.registered = false
            } else {
                let add: Int32 = entry.registered ? 0 : 1
                _ = try syscall("epoll_ctl(\(add == 1 ? "ADD" : "MOD"), \(entry.fd))") {
                    csl_epoll_watch(
                        epoll, entry.fd, add, interest.contains(.read) ? 1 : 0, interest.contains(.write) ? 1 : 0, key)
                }
                entry.registered = true
            }
            state.entries[key] = entry
        }
    }

    private func close(key: UInt64) {
        guard let entry = state.withLock({ $0.entries.removeValue(forKey: key) }) else { return }
        // Out of the set before the number is free again; a close would drop it too, but only
        // once no other descriptor refers to the socket.
        if entry.registered { _ = csl_epoll_forget(epoll, entry.fd) }
        SystemCalls.close(entry.fd)
    }

    private func run() {
        let capacity = 64
        var keys = [UInt64](repeating: 0, count: capacity)
        var readable = [UInt8](repeating: 0, count: capacity)
        var writable = [UInt8](repeating: 0, count: capacity)
        while true {
            let count = csl_epoll_wait(epoll, &keys, &readable, &writable, Int32(capacity))
            guard count > 0 else {
                // EINTR, or a failure that retrying at once would turn into a spin.
                if count < 0 && Glibc.errno != EINTR { usleep(10_000) }
                continue
            }
            for index in 0..<Int(count) {
                let key = keys[index]
                let readiness = Readiness(readable: readable[index] != 0, writable: writable[index] != 0)
                guard let queue = state.withLock({ $0.entries[key]?.queue }) else { continue }
                queue.async { [self] in
                    // Looked up again on the socket's queue: a socket closed in between is gone.
                    guard let handler = state.withLock({ $0.entries[key]?.handler }) else { return }
                    handler(readiness)
                }
            }
        }
    }
}
