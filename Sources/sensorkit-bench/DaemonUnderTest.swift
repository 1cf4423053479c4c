import Foundation

/// The `sensorkitd` the bench starts: `$SENSORKIT_BENCH_DAEMON` when set — `make bench` sets it to
/// the daemon as installed (`make install`, `make deb`: the Swift runtime linked statically,
/// `.build/static/release`), so the figures are a tablet's — else the one beside the bench.
enum DaemonUnderTest {
    static var path: String {
        if let chosen = ProcessInfo.processInfo.environment["SENSORKIT_BENCH_DAEMON"], !chosen.isEmpty { return chosen }
        return (CommandLine.arguments[0] as NSString).deletingLastPathComponent + "/sensorkitd"
    }
}
