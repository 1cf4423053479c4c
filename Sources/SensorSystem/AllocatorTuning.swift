import CSensorLinux
import Foundation
import Synchronization

/// glibc's allocator serves every block of 128 KiB or more with a fresh `mmap` and hands freed
/// memory above 128 KiB back to the kernel at once. A process that decodes and drops megabyte
/// batches over and over — the daemon reading chunks, a client fetching a day — then pays a page
/// fault for every 4 KiB of every batch, again and again: more CPU than the chunk decoding
/// itself (docs/measurements/fetch.md). `forBulkData()` keeps such memory in the heap for reuse: blocks up to 32 MiB
/// come from the heap, and up to 64 MiB of free heap is kept rather than trimmed.
///
/// Left alone where someone chose otherwise: when glibc's malloc is already tuned through the
/// environment (`GLIBC_TUNABLES` naming malloc, `MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_`)
/// or `SENSORKIT_MALLOC=default` is set.
///
/// The daemon and the bench apply it at start. The client library lives in someone else's
/// process, whose allocator is not ours to retune: it applies the setting only when the app asks
/// (`forLibraryClient`; docs/configuration.md).
public enum AllocatorTuning {
    public static let mmapThreshold = 32 << 20
    public static let trimThreshold = 64 << 20

    /// What `forBulkData()` did in this process, for logs and `--help` texts.
    public enum Outcome: Sendable, Equatable {
        case tuned
        case leftToEnvironment(String)
        case refused
    }

    private static let applied = Mutex<Outcome?>(nil)

    /// Applies the tuning once per process (later calls return the first outcome).
    @discardableResult
    public static func forBulkData(environment: [String: String] = ProcessInfo.processInfo.environment) -> Outcome {
        applied.withLock { outcome in
            if let outcome { return outcome }
            let decided =
                reasonToLeaveAlone(environment).map(Outcome.leftToEnvironment)
                ?? (csl_malloc_thresholds(Int32(mmapThreshold), Int32(trimThreshold)) == 1 ? .tuned : .refused)
            outcome = decided
            return decided
        }
    }

    /// What this process's tuning turned out to be, or nil while nothing applied it.
    public static var current: Outcome? { applied.withLock { $0 } }

    /// The environment setting by which an app that links the client library asks for the tuning.
    public static let libraryOptIn = (name: "SENSORKIT_MALLOC", value: "bulk")

    /// For the client library: applies the tuning only when the app opted in (`SENSORKIT_MALLOC=bulk`
    /// in `environment`), else leaves malloc as the app has it and returns nil. An app can also
    /// opt in from code, through the library's `BulkFetchMemory.keep()`.
    @discardableResult
    public static func forLibraryClient(environment: [String: String] = ProcessInfo.processInfo.environment) -> Outcome? {
        guard environment[libraryOptIn.name] == libraryOptIn.value else { return nil }
        return forBulkData(environment: environment)
    }

    /// Why glibc's malloc must be left as it is in `environment`, or nil to tune it.
    public static func reasonToLeaveAlone(_ environment: [String: String]) -> String? {
        if environment["SENSORKIT_MALLOC"] == "default" { return "SENSORKIT_MALLOC=default" }
        if let tunables = environment["GLIBC_TUNABLES"], tunables.contains("glibc.malloc.") { return "GLIBC_TUNABLES" }
        return ["MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"].first { environment[$0] != nil }
    }
}
