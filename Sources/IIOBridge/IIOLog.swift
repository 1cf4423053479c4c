/// Where the bridge's orchestration — discovery and the captures it starts — reports what an
/// administrator should read: a skipped or degraded device, a capture that could not start, a
/// read that failed. One line per event, each with a journald priority prefix (`<3>` error,
/// `<4>` warning, `<5>` notice, `<6>` info, `<7>` debug), so the daemon passes its journal's raw
/// line writer and tests collect lines. Parsers and sysfs wrappers never log; they throw.
public struct IIOLog: Sendable {
    private let write: @Sendable (String) -> Void

    /// `write` receives whole lines that already carry their `<N>` prefix.
    public init(_ write: @escaping @Sendable (String) -> Void) { self.write = write }

    /// Drops every line.
    public static let discard = IIOLog { _ in }

    public func error(_ message: String) { write("<3>" + message) }
    public func warning(_ message: String) { write("<4>" + message) }
    public func notice(_ message: String) { write("<5>" + message) }
    public func info(_ message: String) { write("<6>" + message) }
    public func debug(_ message: String) { write("<7>" + message) }
}
