import ModemBridge
import SensorKitModel
import Synchronization
import Testing

/// The recorder's contact keys: unique contacts are counted through a keyed hash whose key lives
/// for one interval only, so a number's digest in one report cannot be matched with the next's.
@Suite struct ModemUsageRecorderTests {
    static let second: Int64 = 1_000_000_000
    static let quarter = 15 * 60 * second

    @Test(.timeLimit(.minutes(3))) func eachIntervalHasAFreshContactKey() throws {
        let time = ManualTime()
        let made = KeyCount()
        let events = Mutex<[SourceEvent]>([])
        let settings = ModemSettings()
        // No broker listens there: the watcher finds no ModemManager; the test says what it would have.
        let recorder = ModemUsageRecorder(
            bus: .address("unix:path=/nonexistent/sensorkit-contact-keys"), settings: settings, clock: time,
            scheduler: time, log: { _ in },
            newKey: {
                let n = made.next()
                return ContactKey(k0: n, k1: ~n)
            })
        recorder.start(.messages, descriptor: ModemUsageSamples.descriptor(.messages, settings: settings)) { event in
            events.withLock { $0.append(event) }
        }
        recorder.queue.sync {}
        #expect(made.count == 1, "the first interval's key")
        recorder.observe(.observable(true))

        // To one second past the first boundary, then a quarter hour at a time: one interval
        // closes at each step, and a new key is drawn for the next.
        let realtime = time.realtimeNanoseconds()
        var steps = [Self.quarter - realtime % Self.quarter + Self.second]
        steps += Array(repeating: Self.quarter, count: 3)
        for (index, step) in steps.enumerated() {
            recorder.observe(.message(.incoming, number: "+15550100"))
            recorder.queue.sync {}
            try time.advance(by: .nanoseconds(step))
            recorder.queue.sync {}
            #expect(made.count == 2 + index, "after interval \(index + 1)")
        }
        // A second stream keys its intervals on its own.
        recorder.start(.phone, descriptor: ModemUsageSamples.descriptor(.phone, settings: settings)) { _ in }
        recorder.queue.sync {}
        #expect(made.count == 2 + steps.count)
        recorder.stop(.phone)
        recorder.stop(.messages)
        // A report per closed interval came out.
        let samples = events.withLock { $0 }.filter { if case .samples = $0 { true } else { false } }
        #expect(samples.count >= steps.count)
    }
}

/// How many contact keys the recorder asked for.
final class KeyCount: Sendable {
    private let made = Mutex(0)
    /// Counts one more key; returns the count so far.
    func next() -> UInt64 {
        made.withLock { count in
            count += 1
            return UInt64(count)
        }
    }
    var count: Int { made.withLock { $0 } }
}
