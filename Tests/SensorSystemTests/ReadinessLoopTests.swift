import Dispatch
import Foundation
import Glibc
import SensorSystem
import Synchronization
import Testing

/// The reading thread: it runs its body only when the fd is readable or a deadline it asked for
/// passed, never while idle, and `stop()` returns once the thread has left.
@Suite struct ReadinessLoopTests {
    /// A pipe whose read end the loop watches; the test writes to the other.
    final class Pipe: Sendable {
        let read: Int32, write: Int32
        init() {
            var fds: [Int32] = [-1, -1]
            #expect(pipe(&fds) == 0)
            read = fds[0]
            write = fds[1]
            _ = fcntl(read, F_SETFL, fcntl(read, F_GETFL) | O_NONBLOCK)
        }
        func send(_ byte: UInt8) { var byte = byte; #expect(Glibc.write(write, &byte, 1) == 1) }
        func drain() -> Int {
            var buffer = [UInt8](repeating: 0, count: 64)
            return max(0, Glibc.read(read, &buffer, 64))
        }
        deinit {
            Glibc.close(read)
            Glibc.close(write)
        }
    }

    final class Calls: Sendable {
        let wakes = Mutex<[ReadinessLoop.Wake]>([])
        let exited = Mutex(false)
        var all: [ReadinessLoop.Wake] { wakes.withLock { $0 } }
        func waitFor(_ count: Int, seconds: Double = 3) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while all.count < count, Date() < deadline { usleep(2_000) }
            return all.count >= count
        }
    }

    @Test func runsOnlyWhenTheFdIsReadableAndStopWaitsForTheThread() throws {
        let pipe = Pipe(), calls = Calls()
        let loop = try ReadinessLoop(
            name: "test", fileDescriptor: pipe.read,
            body: { wake in
                // Drained before the wake is counted: a byte the test sends once it saw the
                // count must make a wake of its own, not be drained with this one.
                _ = pipe.drain()
                calls.wakes.withLock { $0.append(wake) }
                return .wait(nanoseconds: nil)
            }, onExit: { calls.exited.withLock { $0 = true } })
        usleep(200_000)
        #expect(calls.all.isEmpty, "an idle loop does not wake")
        pipe.send(1)
        #expect(calls.waitFor(1))
        pipe.send(2)
        #expect(calls.waitFor(2))
        #expect(calls.all == [.readable, .readable])
        loop.stop()
        #expect(calls.exited.withLock { $0 }, "stop returns after the thread left")
        pipe.send(3)
        usleep(50_000)
        #expect(calls.all.count == 2, "no call after stop")
        loop.stop()  // idempotent
    }

    @Test func aDeadlineTheBodyAskedForWakesItOnce() throws {
        let pipe = Pipe(), calls = Calls()
        let started = Date()
        let loop = try ReadinessLoop(
            name: "test", fileDescriptor: pipe.read,
            body: { wake in
                // Drained before the wake is counted: a byte the test sends once it saw the
                // count must make a wake of its own, not be drained with this one.
                _ = pipe.drain()
                calls.wakes.withLock { $0.append(wake) }
                return .wait(nanoseconds: wake == .readable ? 100_000_000 : nil)
            }, onExit: {})
        pipe.send(1)
        #expect(calls.waitFor(2))
        #expect(Date().timeIntervalSince(started) >= 0.1, "not before the deadline")
        usleep(250_000)
        #expect(calls.all == [.readable, .deadline], "one deadline, then sleep until readable")
        loop.stop()
    }

    @Test func theBodyEndsTheLoopByItself() throws {
        let pipe = Pipe(), calls = Calls()
        let loop = try ReadinessLoop(
            name: "test", fileDescriptor: pipe.read,
            body: { wake in
                calls.wakes.withLock { $0.append(wake) }
                return .stop
            }, onExit: { calls.exited.withLock { $0 = true } })
        pipe.send(1)
        #expect(calls.waitFor(1))
        loop.stop()
        #expect(calls.exited.withLock { $0 })
        #expect(calls.all == [.readable])
    }

    /// The thread carries its name in the kernel, where `ps -L` and /proc show it.
    @Test func theThreadIsNamedForTheKernel() throws {
        let pipe = Pipe()
        let seen = Mutex<String?>(nil)
        let loop = try ReadinessLoop(
            name: "iio iio:device12", fileDescriptor: pipe.read,
            body: { _ in
                let fd = open("/proc/thread-self/comm", O_RDONLY)
                var bytes = [UInt8](repeating: 0, count: 64)
                let count = fd < 0 ? 0 : max(0, Glibc.read(fd, &bytes, 64))
                if fd >= 0 { Glibc.close(fd) }
                seen.withLock { $0 = String(decoding: bytes.prefix(count), as: UTF8.self) }
                return .stop
            }, onExit: {})
        pipe.send(1)
        let deadline = Date().addingTimeInterval(3)
        while seen.withLock({ $0 }) == nil, Date() < deadline { usleep(2_000) }
        loop.stop()
        #expect(seen.withLock { $0 } == "iio iio:device1\n", "cut to the kernel's 15 bytes")
    }
}
