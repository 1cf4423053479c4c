import CSensorLinux
import Glibc

/// A regular file of a fixed size mapped `MAP_SHARED` for reading and writing: what a process
/// writes into it is in the page cache at once, without a system call, and outlives the process
/// if it is killed (not a power cut: nothing here syncs). Opened `O_NOFOLLOW`, owner-only (0600),
/// refused unless it is a regular file. Written by one thread at a time (its owner's).
public final class SharedFileMapping: @unchecked Sendable {
    // @unchecked: the mapping's bytes are its owner's to confine; the rest is immutable.
    public let path: String
    public let size: Int
    /// The first byte of the mapping (8-byte aligned: a page).
    public let base: UnsafeMutableRawPointer

    /// Creates `path` (or takes the file there, cut or grown to `size`) and maps it.
    public init(path: String, size: Int) throws(SystemError) {
        precondition(size > 0, "a mapping has at least one byte")
        let fd = try SystemCalls.open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode: 0o600)
        defer { _ = SystemCalls.close(fd) }
        let status = try SystemCalls.fstat(fd, path)
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw SystemError("open(\(path)): not a regular file", errno: EINVAL)
        }
        try SystemCalls.ftruncate(fd, to: size, path)
        guard let mapped = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), mapped != MAP_FAILED else {
            throw SystemError("mmap(\(path))", errno: errno)
        }
        self.path = path
        self.size = size
        base = mapped
    }

    deinit { munmap(base, size) }

    /// Stores `value` at byte `offset` (8-byte aligned) after every store made before it.
    public func publish(_ value: Int64, at offset: Int) {
        precondition(offset >= 0 && offset + 8 <= size && offset % 8 == 0, "an aligned Int64 inside the mapping")
        csl_store_release_i64(base.advanced(by: offset).assumingMemoryBound(to: Int64.self), value)
    }
}
