import SensorKitModel
import Synchronization
import Testing

@testable import UsageBridge

/// The recorder on hand-driven time: reports close at wall-clock quarter hours, an unwatched
/// interval is a deletion record, a stretch some part of the report went unobserved is one beside
/// the report, and the rows are the family's.
@Suite struct UsageRecorderTests {
    @Test func intervalsCloseAtQuarterHoursIntoRowsOrDeletionRecords() throws {
        // The fake wall clock starts 400 s into a quarter hour: the first closes 500 s later.
        let time = ManualTime()
        let recorder = UsageRecorder(clock: time, scheduler: time)
        let delivered = Mutex<[SourceEvent]>([])
        let start = time.boottimeNanoseconds()
        recorder.feed(.watching(.logindLockedHint, true, at: start))
        recorder.feed(.watching(.compositor, true, at: start))
        recorder.feed(.locked(true, at: start, from: .logindLockedHint))
        recorder.setRecording(true) { event in delivered.withLock { $0.append(event) } }
        recorder.queue.sync {}
        try time.advance(by: .seconds(100))
        let maps = UsageApp(id: "org.gnome.Maps", category: .navigation)
        recorder.feed(.locked(false, at: time.boottimeNanoseconds(), from: .logindLockedHint))
        recorder.feed(.notification(app: maps, event: .received, at: time.boottimeNanoseconds()))
        recorder.queue.sync {}
        try time.advance(by: .seconds(400))
        let first = delivered.withLock { $0 }
        try #require(first.count == 1)
        guard case .samples(let batch) = first[0] else {
            Issue.record("a report, not \(first[0])")
            return
        }
        // The report row and the notification row, both at the interval's end.
        #expect(batch.count == 2 && Set(batch.sensorTimes) == [start + 500_000_000_000])
        let columns = recorder.descriptor.columns.map(\.name)
        let column = { (name: DeviceUsageFamily.Column) in batch.columns[columns.firstIndex(of: name.rawValue)!] }
        #expect(column(.entry) == [0, 2])
        #expect(column(.unlocks) == [1, 0] && column(.unlockDuration) == [400_000_000_000, 0])
        #expect(column(.duration) == [500_000_000_000, 0])
        #expect(column(.unlockSource) == [Int64(UsageObservation.logindLockedHint.rawValue), 0])
        #expect(column(.events) == [0, 1] && column(.category) == [0, 11])
        #expect(DesktopIDCode.decode(DeviceUsageFamily.Column.appWords.map { Double(column($0)[1]) }) == "org.gnome.Maps")

        // logind and the compositor go: the next interval, watched at its start, still reports, with
        // its unwatched stretch as a deletion record; the one after is lost whole.
        recorder.feed(.watching(.logindLockedHint, false, at: time.boottimeNanoseconds()))
        recorder.feed(.watching(.compositor, false, at: time.boottimeNanoseconds()))
        recorder.queue.sync {}
        try time.advance(by: .seconds(1800))
        let later = delivered.withLock { $0 }
        #expect(later.count == 4)
        if case .gap(let from, let to, _, _) = later[2] {
            #expect(from.nanoseconds == start + 500_000_000_000 && to.nanoseconds == start + 1_400_000_000_000)
        } else {
            Issue.record("the unwatched stretch is a deletion record: \(later)")
        }
        if case .gap(let from, let to, let reason, _) = later.last {
            #expect(from.nanoseconds == start + 1_400_000_000_000 && to.nanoseconds == start + 2_300_000_000_000)
            #expect(reason == .systemInitiated)
        } else {
            Issue.record("the unwatched interval is a deletion record: \(later)")
        }
        recorder.setRecording(false) { _ in }
        #expect(time.pendingTimers == 0)
    }

    @Test func aStretchNothingWatchedIsADeletionRecordWhenWatchingResumes() throws {
        let time = ManualTime()
        let recorder = UsageRecorder(clock: time, scheduler: time)
        let delivered = Mutex<[SourceEvent]>([])
        let start = time.boottimeNanoseconds()
        recorder.feed(.watching(.logindLockedHint, true, at: start))
        recorder.feed(.watching(.compositor, true, at: start))
        recorder.setRecording(true) { event in delivered.withLock { $0.append(event) } }
        recorder.queue.sync {}
        try time.advance(by: .seconds(100))
        recorder.feed(.watching(.logindLockedHint, false, at: time.boottimeNanoseconds()))
        recorder.feed(.watching(.compositor, false, at: time.boottimeNanoseconds()))
        try time.advance(by: .seconds(60))
        recorder.feed(.watching(.logindLockedHint, true, at: time.boottimeNanoseconds()))
        recorder.feed(.watching(.compositor, true, at: time.boottimeNanoseconds()))
        recorder.queue.sync {}
        let events = delivered.withLock { $0 }
        #expect(events.count == 1)
        if case .gap(let from, let to, let reason, _) = events.first {
            #expect(from.nanoseconds == start + 100_000_000_000 && to.nanoseconds == start + 160_000_000_000)
            #expect(reason == .systemInitiated)
        } else {
            Issue.record("the unwatched stretch is a deletion record: \(events)")
        }
        // The interval itself is still a report, closed at the quarter hour.
        try time.advance(by: .seconds(400))
        #expect(delivered.withLock { $0.count } == 2)
        recorder.setRecording(false) { _ in }
    }

    /// logind watches but no compositor does (no agent, or GNOME/KDE without the wlr protocols):
    /// each report comes with a deletion record over the stretch the app in front went unobserved,
    /// and logind gone while the compositor watches is one for the lock state.
    @Test func aStretchWithoutTheAppInFrontIsADeletionRecordBesideTheReport() throws {
        let time = ManualTime()
        let recorder = UsageRecorder(clock: time, scheduler: time)
        let delivered = Mutex<[SourceEvent]>([])
        let start = time.boottimeNanoseconds()
        let seconds = { (count: Int64) in start + count * 1_000_000_000 }
        recorder.feed(.watching(.logindLockedHint, true, at: start))
        recorder.feed(.watching(.logindIdleHint, true, at: start))
        recorder.setRecording(true) { event in delivered.withLock { $0.append(event) } }
        recorder.queue.sync {}
        try time.advance(by: .seconds(500))
        recorder.queue.sync {}
        let first = delivered.withLock { $0 }
        try #require(first.count == 2, "\(first)")
        guard case .samples = first[0], case .gap(let from, let to, let reason, let why) = first[1] else {
            Issue.record("a report and a deletion record: \(first)")
            return
        }
        #expect(from.nanoseconds == start && to.nanoseconds == seconds(500) && reason == .systemInitiated)
        #expect(why.contains("the app in front") && why.contains("notifications") && !why.contains("lock state"))

        // The agent comes with a compositor 100 s in: the stretch before it is the record, the
        // rest of the interval is observed whole.
        try time.advance(by: .seconds(100))
        recorder.feed(.watching(.screenSaver, true, at: seconds(600)))
        recorder.feed(.watching(.compositor, true, at: seconds(600)))
        recorder.queue.sync {}
        // logind goes for 60 s while the compositor and the screen saver watch: the lock state is
        // still observed (the screen saver), so nothing is lost; without the screen saver it is.
        try time.advance(by: .seconds(100))
        recorder.feed(.watching(.logindLockedHint, false, at: seconds(700)))
        recorder.feed(.watching(.screenSaver, false, at: seconds(700)))
        try time.advance(by: .seconds(60))
        recorder.feed(.watching(.logindLockedHint, true, at: seconds(760)))
        recorder.queue.sync {}
        try time.advance(by: .seconds(640))
        recorder.queue.sync {}
        let second = Array(delivered.withLock { $0 }.dropFirst(2))
        try #require(second.count == 3, "\(second)")
        if case .gap(let from, let to, _, let why) = second[0] {
            #expect(from.nanoseconds == seconds(500) && to.nanoseconds == seconds(600))
            #expect(why.contains("the app in front"))
        } else {
            Issue.record("the stretch before the compositor is a deletion record: \(second)")
        }
        if case .gap(let from, let to, _, let why) = second[1] {
            #expect(from.nanoseconds == seconds(700) && to.nanoseconds == seconds(760))
            #expect(why.contains("lock state") && !why.contains("the app in front") && !why.contains("notifications"))
        } else {
            Issue.record("the stretch without a lock source is a deletion record: \(second)")
        }
        guard case .samples = second[2] else {
            Issue.record("the interval is still a report: \(second)")
            return
        }
        recorder.setRecording(false) { _ in }
        #expect(time.pendingTimers == 0)
    }

    /// Recording starts a few queue hops after the stake's reply: an app brought to the front in
    /// between (or any time before) is the app in front from the report's start, and text typed
    /// in it counts into it (a CI failure of 2026-12-06 lost the foreground that came first).
    @Test func anAppBroughtToTheFrontBeforeRecordingStartsIsInFrontFromTheStart() throws {
        let time = ManualTime()
        let recorder = UsageRecorder(clock: time, scheduler: time)
        let delivered = Mutex<[SourceEvent]>([])
        let start = time.boottimeNanoseconds()
        let editor = UsageApp(id: "org.gnome.TextEditor", category: .productivity)
        recorder.feed(.watching(.compositor, true, at: start))
        recorder.feed(.foreground(app: editor, at: start))
        try time.advance(by: .seconds(10))
        recorder.setRecording(true) { event in delivered.withLock { $0.append(event) } }
        recorder.feed(.textInput(at: time.boottimeNanoseconds()))
        recorder.queue.sync {}
        try time.advance(by: .seconds(490))
        recorder.queue.sync {}
        let events = delivered.withLock { $0 }
        guard case .samples(let batch) = events.first else {
            Issue.record("a report, not \(events)")
            return
        }
        let columns = recorder.descriptor.columns.map(\.name)
        let column = { (name: DeviceUsageFamily.Column) in batch.columns[columns.firstIndex(of: name.rawValue)!] }
        let row = try #require(column(.entry).firstIndex(of: 1), "an application row: \(column(.entry))")
        #expect(DesktopIDCode.decode(DeviceUsageFamily.Column.appWords.map { Double(column($0)[row]) }) == editor.id)
        #expect(column(.textInputSessions)[row] == 1)
        #expect(column(.usageTime)[row] == 490_000_000_000, "in front from the start of recording, not from before it")
        recorder.setRecording(false) { _ in }
    }

    /// `[device-usage] interval`: reports span the interval set, closed at its wall-clock multiples.
    @Test func aSetIntervalClosesReportsAtItsMultiples() throws {
        let time = ManualTime()
        let length: Int64 = 7_000_000_000
        let recorder = UsageRecorder(clock: time, scheduler: time, intervalNanoseconds: length)
        #expect(recorder.descriptor.details["interval"] == "7")
        let delivered = Mutex<[SourceEvent]>([])
        let start = time.boottimeNanoseconds()
        let firstEnd = UsageSamples.nextBoundary(boot: start, realtime: time.realtimeNanoseconds(), length: length)
        recorder.feed(.watching(.logindLockedHint, true, at: start))
        recorder.setRecording(true) { event in delivered.withLock { $0.append(event) } }
        recorder.queue.sync {}
        try time.advance(by: .nanoseconds(firstEnd - start + 2 * length))
        recorder.queue.sync {}
        let ends = delivered.withLock { events in
            events.compactMap { event -> Int64? in
                guard case .samples(let batch) = event else { return nil }
                return batch.sensorTimes.first
            }
        }
        #expect(ends == [firstEnd, firstEnd + length, firstEnd + 2 * length], "\(ends)")
        recorder.setRecording(false) { _ in }
    }
}
