import Foundation
import Synchronization

/// The daemon's log: one line per event on stderr with a journald priority prefix (`<3>` error,
/// `<4>` warning, `<5>` notice, `<6>` info, `<7>` debug), which journald turns into priorities and
/// a terminal shows as is. The orchestration layer logs; drivers, store and codecs return errors.
public struct Journal: Sendable {
    private let write: @Sendable (String) -> Void

    public init(write: @escaping @Sendable (String) -> Void) { self.write = write }

    /// Lines to stderr, whole lines only (one write per line, so threads never interleave).
    public static let standardError = Journal { line in
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// Collects lines in memory (tests read them).
    public static func memory() -> (Journal, @Sendable () -> [String]) {
        let lines = Mutex<[String]>([])
        return (Journal { line in lines.withLock { $0.append(line) } }, { lines.withLock { $0 } })
    }

    /// Logs a line that already carries its `<N>` prefix.
    public func callAsFunction(_ line: String) { write(line) }
    public func error(_ message: String) { write("<3>" + message) }
    public func warning(_ message: String) { write("<4>" + message) }
    public func notice(_ message: String) { write("<5>" + message) }
    public func info(_ message: String) { write("<6>" + message) }
}
