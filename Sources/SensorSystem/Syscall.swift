import Glibc

/// A failed system call: which call, with which errno (NIO's `IOError`, swift-system's `Errno`).
public struct SystemError: Error, Hashable, Sendable, CustomStringConvertible {
    public let call: String
    public let errno: Int32
    public init(_ call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }
    public var description: String { "\(call): \(String(cString: strerror(errno))) (errno \(errno))" }
}

/// What a non-blocking call produced: a value, or "try again later" (EAGAIN is weather, not an error).
public enum IOResult<Value> {
    case done(Value)
    case wouldBlock
}

/// The one funnel every syscall goes through: retries on EINTR, turns −1 into a `SystemError`.
@inline(__always)
public func syscall<T: FixedWidthInteger>(_ name: @autoclosure () -> String, _ body: () -> T) throws(SystemError) -> T {
    while true {
        let result = body()
        if result != -1 { return result }
        let error = Glibc.errno
        if error == EINTR { continue }
        throw SystemError(name(), errno: error)
    }
}

/// Like `syscall`, but EAGAIN/EWOULDBLOCK is `.wouldBlock` (for non-blocking fds).
@inline(__always)
public func nonBlockingSyscall<T: FixedWidthInteger>(
    _ name: @autoclosure () -> String, _ body: () -> T
) throws(SystemError) -> IOResult<T> {
    while true {
        let result = body()
        if result != -1 { return .done(result) }
        let error = Glibc.errno
        if error == EINTR { continue }
        if error == EAGAIN || error == EWOULDBLOCK { return .wouldBlock }
        throw SystemError(name(), errno: error)
    }
}
