import Dispatch
import Foundation
import SensorKitModel

/// The host's `visits` source: visits the session agent hands over (`feed`, any thread) become
/// one row each, timed when the daemon took them; while some app records and no agent watches
/// location, the time becomes a deletion record. Visits are dropped while nobody records.
public final class VisitRecorder: SensorSource, @unchecked Sendable {
    // @unchecked: every var is touched only on `queue`.
    public let descriptor = VisitRecorder.makeDescriptor()
    public let queue = DispatchQueue(label: "sensorkitd.visits")
    public static let source = "session:visits"
    public static let schema = SourceSchema<VisitsFamily.Stored>(every: VisitsFamily.kind)
    private let clock: any SystemClock
    private var deliver: (@Sendable (SourceEvent) -> Void)?
    /// Agents watching location now (each says on and off for itself).
    private var watchers = 0
    /// While recording with no watcher: since when.
    private var unwatchedSince: Int64?
    private var recorded = 0

    public init(clock: any SystemClock) { self.clock = clock }

    static func makeDescriptor() -> SourceDescriptor {
        SourceDescriptor(
            sensor: .visits, device: SRDevice.hostIdentifier, source: source, schema: schema, details: ["driver": "visits"])
    }

    public var captureStatus: CaptureStatus? { queue.sync { deliver == nil ? .idle : .recording } }

    public var status: [String: String] {
        queue.sync { ["watchers": "\(watchers)", "visits": "\(recorded)"] }
    }

    /// Takes `event` (asynchronously, in the order fed).
    public func feed(_ event: VisitEvent) {
        queue.async { [self] in
            switch event {
            case .watching(true, let at):
                watchers += 1
                if watchers == 1, let since = unwatchedSince {
                    unwatchedSince = nil
                    gap(from: since, to: at)
                }
            case .watching(false, let at):
                watchers = max(0, watchers - 1)
                if watchers == 0, deliver != nil, unwatchedSince == nil { unwatchedSince = at }
            case .visit(let visit, let at):
                guard let deliver else { return }
                recorded += 1
                deliver(.samples(Self.batch([visit], at: at, boot: clock.bootID, for: descriptor)))
            }
        }
    }

    public func setRecording(_ recording: Bool, deliver: @escaping @Sendable (SourceEvent) -> Void) {
        if recording {
            queue.async { [self] in
                guard self.deliver == nil else { return }
                self.deliver = deliver
                recorded = 0
                if watchers == 0 { unwatchedSince = clock.boottimeNanoseconds() }
            }
        } else {
            // Waits, so the unwatched time so far is delivered before the pipeline stops taking events.
            queue.sync {
                if let since = unwatchedSince { gap(from: since, to: clock.boottimeNanoseconds()) }
                unwatchedSince = nil
                self.deliver = nil
            }
        }
    }

    public func close() { setRecording(false) { _ in } }

    private func gap(from start: Int64, to end: Int64) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let deliver, end > start else { return }
        deliver(
            .gap(
                from: BootInstant(boot: clock.bootID, nanoseconds: start), to: BootInstant(boot: clock.bootID, nanoseconds: end),
                reason: .systemInitiated, why: "no session agent watched location"))
    }

    /// One row per visit, all timed `at` (boot ns).
    public static func batch(_ visits: [HandedVisit], at: Int64, boot: BootID, for descriptor: SourceDescriptor) -> SourceBatch {
        typealias C = VisitsFamily.Column
        var values = BatchValues<C>()
        values[.distance] = visits.map(\.distance)
        for (index, column) in C.bounds.enumerated() {
            values[column] = visits.map { $0.ages[index] == -1 ? VisitsFamily.unknownBound : $0.ages[index] }
        }
        values[.category] = visits.map { Int64($0.category.rawValue) }
        for (index, column) in C.identifierWords.enumerated() {
            values[column] = visits.map { VisitsFamily.words($0.identifier)[index] }
        }
        let times = Array(repeating: at, count: visits.count)
        return SourceBatch(boot: boot, sensorTimes: times, receiveTimes: times, values: values, for: descriptor)
    }
}
