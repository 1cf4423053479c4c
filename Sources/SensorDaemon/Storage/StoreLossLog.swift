import Foundation
import SensorStore
import SensorSystem
import Synchronization

/// The log of the store losing new samples (`StoreLossEvent`): one line when a loss starts, a
/// summary every `interval` while it goes on (`RecurringProblems`), one line when samples are
/// written again with how many were lost and for how long. A full disk that drops every sample
/// for minutes is then three or four lines, not silence and not a line per commit.
final class StoreLossLog: Sendable {
    private struct Episode {
        let problems: RecurringProblems
        let since: Int64
        var samples = 0
    }

    static let cause = "store: still losing new samples"
    private let journal: Journal
    private let interval: Int64
    private let now: @Sendable () -> Int64
    private let episode = Mutex<Episode?>(nil)

    /// `now` gives monotonic nanoseconds (injected for tests); `interval` is in nanoseconds.
    init(
        _ journal: Journal, interval: Int64 = 60_000_000_000,
        now: @escaping @Sendable () -> Int64 = { Int64(clamping: DispatchTime.now().uptimeNanoseconds) }
    ) {
        self.journal = journal
        self.interval = interval
        self.now = now
    }

    func on(_ event: StoreLossEvent) {
        switch event {
        case .losing(let samples):
            let problems = episode.withLock { episode -> RecurringProblems in
                if episode == nil {
                    episode = Episode(problems: RecurringProblems(journal, interval: interval, now: now), since: now())
                }
                episode!.samples += samples
                return episode!.problems
            }
            problems.report(
                Self.cause,
                "<4>store: losing new samples (\(samples) so far): the disk budget or a failed write leaves no room; each loss is recorded as a deletion record (lowDiskSpace, or systemInitiated for a failed write); free space or raise [store] max-bytes"
            )
        case .recovered:
            guard
                let ended = episode.withLock({ episode -> Episode? in
                    defer { episode = nil }; return episode
                })
            else { return }
            ended.problems.flush()
            let seconds = Double(max(0, now() - ended.since)) / 1e9
            journal.notice(
                "store: writing new samples again after losing \(ended.samples) in \(String(format: "%.1f", seconds)) s")
        }
    }
}
