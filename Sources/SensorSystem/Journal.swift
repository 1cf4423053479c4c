import Foundation
import Synchronization

/// The one log of sensorkitd and its tools: one line per event on stderr with a journald priority
/// prefix (`<3>` error, `<4>` warning, `<5>` notice, `<6>` info, `<7>` debug), which journald turns
/// into priorities and a terminal shows as is. Orchestration (the daemon, the drivers' discovery
/// and captures) logs; parsers, codecs and the store return errors instead.
///
/// Every line passes `line(_:)`: whatever a client, a device or a file put into it, a line is one
/// line (control characters escaped, `PrintableText`) of at most `lineLimit` scalars, so nothing
/// from outside can forge a line of its own, reach the terminal of whoever reads the log, or grow
/// the log without bound. The messages are `LogMessage`s, whose interpolated values are escaped and
/// cut one by one, so a long value cannot push the rest of its line out.
public struct Journal: Sendable {
    private let write: @Sendable (String) -> Void

    /// The most unicode scalars of one line, prefix included.
    public static let lineLimit = 2048

    /// `write` receives whole lines that already carry their `<N>` prefix.
    public init(write: @escaping @Sendable (String) -> Void) { self.write = write }

    /// Lines to stderr, whole lines only (one write per line, so threads never interleave).
    public static let standardError = Journal { line in
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// Drops every line.
    public static let discard = Journal { _ in }

    /// Collects lines in memory (tests read them).
    public static func memory() -> (Journal, @Sendable () -> [String]) {
        let lines = Mutex<[String]>([])
        return (Journal { line in lines.withLock { $0.append(line) } }, { lines.withLock { $0 } })
    }

    /// Logs a line that already carries its `<N>` prefix.
    public func callAsFunction(_ line: String) { write(Self.line(line)) }
    public func error(_ message: LogMessage) { write(Self.line("<3>" + message.text)) }
    public func warning(_ message: LogMessage) { write(Self.line("<4>" + message.text)) }
    public func notice(_ message: LogMessage) { write(Self.line("<5>" + message.text)) }
    public func info(_ message: LogMessage) { write(Self.line("<6>" + message.text)) }
    public func debug(_ message: LogMessage) { write(Self.line("<7>" + message.text)) }

    /// `text` as the one line it is written as: escaped and cut (a no-op for a line built of
    /// literals and escaped values, short of the bound).
    static func line(_ text: String) -> String {
        if text.unicodeScalars.count <= lineLimit, PrintableText.isPrintable(text) { return text }
        return PrintableText.escaped(text, limit: lineLimit)
    }
}

/// A journal message: the text the code wrote, with every interpolated value escaped and cut to
/// `PrintableText.valueLimit` — an app name a client sent, a wearable's model, an error that quotes
/// either. A message built elsewhere goes in as `"\(message)"` and is escaped like any value;
/// another `LogMessage` interpolated keeps its (already escaped) text.
public struct LogMessage: ExpressibleByStringInterpolation, Sendable, CustomStringConvertible {
    public let text: String
    public var description: String { text }

    public init(stringLiteral value: String) { text = value }
    public init(stringInterpolation: Interpolation) { text = stringInterpolation.text }

    public struct Interpolation: StringInterpolationProtocol {
        var text = ""
        public init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + 16 * interpolationCount)
        }
        public mutating func appendLiteral(_ literal: String) { text += literal }
        public mutating func appendInterpolation(_ value: some Any) {
            text += PrintableText.escaped(String(describing: value))
        }
        /// A value that may be longer than a log value (a study's purpose on a consent sheet).
        public mutating func appendInterpolation(_ value: some Any, limit: Int) {
            text += PrintableText.escaped(String(describing: value), limit: limit)
        }
        public mutating func appendInterpolation(_ message: LogMessage) { text += message.text }
    }
}

/// A problem that may recur many times a second (a device that keeps failing a read, a client
/// that keeps sending garbage): its first occurrence is logged at once; later ones are counted and
/// summed up in one line ("… N more times in the last M s") when the next occurrence comes at
/// least `interval` after the last line, or at `flush()`. The log shows every problem and its
/// scale without drowning.
public final class RecurringProblems: Sendable {
    private struct Cause {
        var pending = 0
        var since: Int64
        var lastLine: Int64
    }

    private let journal: Journal
    private let interval: Int64
    private let now: @Sendable () -> Int64
    private let causes = Mutex<[String: Cause]>([:])
    /// The most causes kept: causes built from outside values (a uid, an app) share one beyond it,
    /// so the table stays bounded whatever the outside sends.
    public static let maximumCauses = 512
    static let otherCauses = "other recurring problems"

    /// `now` gives monotonic nanoseconds (injected for tests); `interval` is in nanoseconds.
    public init(
        _ journal: Journal, interval: Int64 = 60_000_000_000,
        now: @escaping @Sendable () -> Int64 = { Int64(clamping: DispatchTime.now().uptimeNanoseconds) }
    ) {
        self.journal = journal
        self.interval = interval
        self.now = now
    }

    /// One occurrence of `cause`; `line` (with its `<N>` prefix) is what the first one logs.
    public func report(_ cause: String, _ line: @autoclosure () -> String) {
        let time = now()
        enum Action { case first, summary(String, Int, Int64), quiet }
        let action = causes.withLock { causes -> Action in
            let cause = causes[cause] != nil || causes.count < Self.maximumCauses - 1 ? cause : Self.otherCauses
            guard var entry = causes[cause] else {
                causes[cause] = Cause(since: time, lastLine: time)
                return .first
            }
            entry.pending += 1
            var action = Action.quiet
            if time - entry.lastLine >= interval {
                action = .summary(cause, entry.pending, time - entry.since)
                entry.pending = 0
                entry.since = time
                entry.lastLine = time
            }
            causes[cause] = entry
            return action
        }
        switch action {
        case .first: journal(line())
        case .summary(let cause, let count, let span): journal(Self.summary(cause, count: count, span: span))
        case .quiet: break
        }
    }

    /// Logs the count of every cause with occurrences not yet summed up (at shutdown, or from a
    /// periodic timer).
    public func flush() {
        let time = now()
        let pending = causes.withLock { causes -> [(String, Int, Int64)] in
            var out: [(String, Int, Int64)] = []
            for (name, var cause) in causes where cause.pending > 0 {
                out.append((name, cause.pending, time - cause.since))
                cause.pending = 0
                cause.since = time
                cause.lastLine = time
                causes[name] = cause
            }
            return out.sorted { $0.0 < $1.0 }
        }
        for (name, count, span) in pending { journal(Self.summary(name, count: count, span: span)) }
    }

    private static func summary(_ cause: String, count: Int, span: Int64) -> String {
        "<4>\(cause): \(count) more time\(count == 1 ? "" : "s") in the last \(max(1, span / 1_000_000_000)) s"
    }
}
