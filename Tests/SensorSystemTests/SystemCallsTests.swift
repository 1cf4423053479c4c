import Foundation
import Glibc
import SensorSystem
import Synchronization
import Testing

/// Signals the no-op handler of `aReadInterruptedBySignalsIsRetried` has taken.
private let interruptions = Atomic<Int>(0)

/// The syscall funnel itself: EINTR retried, EAGAIN a result, a failure a typed error naming its call.
@Suite(.serialized) struct SystemCallsTests {
    func makePipe(nonBlocking: Bool = false) throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard Glibc.pipe(&fds) == 0 else { throw SystemError("pipe", errno: errno) }
        if nonBlocking { try UnixSocket.setNonBlocking(fds[0]) }
        return (fds[0], fds[1])
    }

    @Test func aReadInterruptedBySignalsIsRetried() throws {
        let (readEnd, writeEnd) = try makePipe()
        defer { SystemCalls.close(readEnd); SystemCalls.close(writeEnd) }
        // A no-op handler without SA_RESTART: a blocked read returns EINTR each time it runs.
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in interruptions.add(1, ordering: .relaxed) }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        var previous = sigaction()
        #expect(sigaction(SIGUSR2, &action, &previous) == 0)
        defer { sigaction(SIGUSR2, &previous, nil) }
        interruptions.store(0, ordering: .relaxed)
        // Test runners may block signals on their threads; this one must take SIGUSR2.
        var unblock = sigset_t(), saved = sigset_t()
        sigemptyset(&unblock)
        sigaddset(&unblock, SIGUSR2)
        #expect(pthread_sigmask(SIG_UNBLOCK, &unblock, &saved) == 0)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        let reader = pthread_self()
        let writer = Thread {
            for _ in 0..<10 {
                usleep(30_000)
                pthread_kill(reader, SIGUSR2)
            }
            var byte = UInt8(ascii: "x")
            _ = Glibc.write(writeEnd, &byte, 1)
        }
        writer.start()
        var byte: UInt8 = 0
        let count = try withUnsafeMutableBytes(of: &byte) { try SystemCalls.read(readEnd, into: $0, "pipe") }
        #expect(count == 1 && byte == UInt8(ascii: "x"))
        #expect(interruptions.load(ordering: .relaxed) == 10)
    }

    @Test func anEmptyNonBlockingPipeWouldBlock() throws {
        let (readEnd, writeEnd) = try makePipe(nonBlocking: true)
        defer { SystemCalls.close(readEnd); SystemCalls.close(writeEnd) }
        var buffer = [UInt8](repeating: 0, count: 16)
        let empty = try buffer.withUnsafeMutableBytes { try SystemCalls.readNonBlocking(readEnd, into: $0, "pipe") }
        guard case .wouldBlock = empty else { Issue.record("an empty pipe read \(empty)"); return }
        _ = try [UInt8]([1, 2, 3]).withUnsafeBytes { try SystemCalls.write(writeEnd, $0, "pipe") }
        let full = try buffer.withUnsafeMutableBytes { try SystemCalls.readNonBlocking(readEnd, into: $0, "pipe") }
        guard case .done(let count) = full else { Issue.record("a pipe with 3 bytes read \(full)"); return }
        #expect(count == 3 && buffer.prefix(3) == [1, 2, 3])
    }

    @Test func aBadDescriptorIsATypedErrorNamingTheCall() {
        var buffer = [UInt8](repeating: 0, count: 4)
        #expect(throws: SystemError("read(nothing)", errno: EBADF)) {
            try buffer.withUnsafeMutableBytes { try SystemCalls.read(-1, into: $0, "nothing") }
        }
        #expect(throws: SystemError("write(nothing)", errno: EBADF)) {
            try buffer.withUnsafeBytes { try SystemCalls.write(-1, $0, "nothing") }
        }
        #expect(SystemCalls.close(-1) == SystemError("close(-1)", errno: EBADF))
        #expect(SystemCalls.shutdown(-1) == SystemError("shutdown(-1)", errno: EBADF))
        #expect(throws: SystemError("stat(/nonexistent/sensorkitd)", errno: ENOENT)) {
            try SystemCalls.stat("/nonexistent/sensorkitd")
        }
        #expect(throws: SystemError("opendir(/nonexistent/sensorkitd)", errno: ENOENT)) {
            try SystemCalls.directoryEntries("/nonexistent/sensorkitd")
        }
    }

    @Test func aSocketPairCarriesBytesBothWays() throws {
        let (a, b) = try SystemCalls.streamSocketPair()
        defer { SystemCalls.close(a); SystemCalls.close(b) }
        #expect(try [UInt8]([9, 8]).withUnsafeBytes { try SystemCalls.write(a, $0, "pair") } == 2)
        var buffer = [UInt8](repeating: 0, count: 2)
        #expect(try buffer.withUnsafeMutableBytes { try SystemCalls.read(b, into: $0, "pair") } == 2)
        #expect(buffer == [9, 8])
        #expect(try SystemCalls.poll(a, events: Int16(POLLOUT), timeoutMilliseconds: 0) & Int16(POLLOUT) != 0)
    }

    @Test func directoryEntriesLeaveOutDotAndDotDot() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        for name in ["b", "a"] { #expect(FileManager.default.createFile(atPath: folder.path + "/" + name, contents: nil)) }
        #expect(try SystemCalls.directoryEntries(folder.path).sorted() == ["a", "b"])
        #expect(try SystemCalls.stat(folder.path + "/a").st_size == 0)
    }
}
