import Foundation
import Glibc

/// Puts an executable where another user (nobody) can run it: the checkout may sit in a folder
/// only root can enter (CI clones into a mode-0700 mktemp folder), so tests that run a product
/// as another uid run it from a 0755 folder of /tmp.
///
/// A hard link where it can be (the same file system, and others may run the binary): no
/// descriptor is ever open for writing on a link. A copy's write descriptor was inherited by
/// whatever a parallel test forked while it was open, and exec'ing the copy then failed with
/// ETXTBSY ("Text file busy") until that child exec'd or exited — seen in CI. Otherwise a copy
/// written through a close-on-exec descriptor, which leaves that window open only between
/// another thread's fork and its exec.
public enum ExecutableForOthers {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Makes `path` run `binary` (mode 0755). `path` must not exist yet.
    public static func place(_ binary: String, at path: String) throws {
        var status = stat()
        if stat(binary, &status) == 0, status.st_mode & 0o005 == 0o005, link(binary, path) == 0 { return }
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: binary)))
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
        guard descriptor >= 0 else { throw Failure(description: "open \(path): errno \(errno)") }
        defer { close(descriptor) }
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { throw Failure(description: "write \(path): errno \(errno)") }
            written += count
        }
        guard fchmod(descriptor, 0o755) == 0 else { throw Failure(description: "fchmod \(path): errno \(errno)") }
    }
}
