import Glibc
import SensorKitModel
import SensorSystem
import Synchronization

/// When typing episodes begin on any keyboard of this machine, for `deviceUsageReport`'s
/// `textInputSessions` (docs/device-usage.md, "Text input"). `KeyboardDiscovery` hands it the
/// keyboards it finds as it would hand them to the daemon's registry (it keeps their devices and
/// records nothing); while someone watches, each node is read on a thread of its own that
/// classifies every key at once and counts it (`TypingTally`, with `keyboardMetrics`'
/// thresholds): only "an episode began at t" leaves the thread — no code, no class, no count.
public final class TypingEpisodeWatch: SourceRegistry, Sendable {
    private struct State {
        var keyboards: [String: KeyboardDevice] = [:]
        var readers: [String: ReadinessLoop] = [:]
        var failures: [String: String] = [:]
        var onEpisode: (@Sendable (Int64) -> Void)?
    }

    private let thresholds: TypingTally.Thresholds
    private let clock: any SystemClock
    private let state = Mutex(State())

    public init(thresholds: TypingTally.Thresholds = .init(), clock: any SystemClock) {
        self.thresholds = thresholds
        self.clock = clock
    }

    /// Starts reading every keyboard, present and future, with `onEpisode` called on a reading
    /// thread at each episode's start (boot ns); nil stops reading and closes the nodes.
    public func watchEpisodes(_ onEpisode: (@Sendable (Int64) -> Void)?) {
        let stopped: [ReadinessLoop] = state.withLock { state in
            state.onEpisode = onEpisode
            defer { state.readers = [:] }
            return Array(state.readers.values)
        }
        // Outside the lock: a loop's stop waits for its thread.
        for loop in stopped { loop.stop() }
        state.withLock { state in
            state.failures = [:]
            guard let onEpisode = state.onEpisode else { return }
            for (identity, keyboard) in state.keyboards { open(keyboard, as: identity, onEpisode, in: &state) }
        }
    }

    /// What is read now, for `sensorkitctl devices`: `N keyboard(s)`, `no keyboard`, or why a
    /// keyboard could not be opened; `off` while nobody watches.
    public var typingStatus: String {
        state.withLock { state in
            guard state.onEpisode != nil else { return "off" }
            if let failure = state.failures.sorted(by: { $0.key < $1.key }).first?.value, state.readers.isEmpty {
                return "failed: \(failure)"
            }
            return state.readers.isEmpty ? "no keyboard" : "\(state.readers.count) keyboard(s)"
        }
    }

    /// A keyboard `KeyboardDiscovery` found (its `KeyboardSource`, never recorded here).
    public func add(_ source: any SensorSource) {
        guard let keyboard = (source as? KeyboardSource)?.keyboard else { return }
        let identity = source.descriptor.source
        state.withLock { state in
            state.keyboards[identity] = keyboard
            if let onEpisode = state.onEpisode, state.readers[identity] == nil {
                open(keyboard, as: identity, onEpisode, in: &state)
            }
        }
    }

    /// A keyboard went away.
    public func remove(source identity: String) {
        let loop = state.withLock { state in
            state.keyboards[identity] = nil
            state.failures[identity] = nil
            return state.readers.removeValue(forKey: identity)
        }
        loop?.stop()
    }

    public func handingOver(_ body: () -> Void) { body() }

    private func open(
        _ keyboard: KeyboardDevice, as identity: String, _ onEpisode: @escaping @Sendable (Int64) -> Void,
        in state: inout State
    ) {
        do throws(SystemError) {
            let device = try EvdevDevice(path: keyboard.devnode)
            let reading = EpisodeReading(device: device, thresholds: thresholds, clock: clock, onEpisode: onEpisode)
            state.readers[identity] = try ReadinessLoop(
                name: "typing", fileDescriptor: device.fileDescriptor, body: { wake in reading.read(wake) },
                onExit: {})
            state.failures[identity] = nil
        } catch {
            state.failures[identity] = error.errno == EACCES ? "\(error) (the daemon needs the group `input`)" : "\(error)"
        }
    }
}

/// One keyboard's reading thread for `TypingEpisodeWatch`: its device, tally and event clock.
final class EpisodeReading: @unchecked Sendable {
    // @unchecked: used only on its ReadinessLoop's thread.
    private let device: EvdevDevice
    private let clock: any SystemClock
    private let onEpisode: @Sendable (Int64) -> Void
    private var tally: TypingTally
    private var times: KeyEventTimes

    init(
        device: EvdevDevice, thresholds: TypingTally.Thresholds, clock: any SystemClock,
        onEpisode: @escaping @Sendable (Int64) -> Void
    ) {
        self.device = device
        self.clock = clock
        self.onEpisode = onEpisode
        tally = TypingTally(thresholds: thresholds)
        times = KeyEventTimes(start: clock.boottimeNanoseconds())
    }

    func read(_ wake: ReadinessLoop.Wake) -> ReadinessLoop.Next {
        let now = clock.boottimeNanoseconds()
        let eventClock = device.eventClockIsBoot ? now : clock.realtimeNanoseconds()
        let (offset, overflow) = now.subtractingReportingOverflow(eventClock)
        var end = EvdevDevice.DrainEnd.empty
        if wake == .readable {
            end = device.drain(
                { event in
                    guard event.type == EvdevDevice.keyEvent, let action = KeyAction(evdevValue: event.value) else { return }
                    let time = times.boot(eventTime: event.time, offset: overflow ? 0 : offset, readAt: now)
                    let before = tally.counts.episodes
                    tally.record(KeyClass(evdevCode: event.code), action, at: time)
                    if tally.counts.episodes != before { onEpisode(time) }
                },
                lost: { tally.eventsLost() })
        }
        if end == .empty { times.drained(at: now) }
        // Only the episode boundary is wanted: the counts start from zero at every read.
        _ = tally.takeCounts()
        switch (wake, end) {
        case (.failed, _), (_, .gone): return .stop
        case (_, .more): return .wait(nanoseconds: 0)
        case (_, .empty): return .wait(nanoseconds: nil)
        }
    }
}
