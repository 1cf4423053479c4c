import SensorKitModel

/// The device usage of one interval being counted: a value fed events in time order
/// (`on(_:)`) and closed at the interval's end (`close(at:)`), which returns the report — or
/// nil when no source watched any of it, for a deletion record — and starts the next interval
/// with the state that carries over (locked or not, the screen, the app in front).
public struct UsageLedger: Sendable {
    /// Apps and notification kinds one interval keeps apart at most; further ones are counted
    /// under an unnamed app of `miscellaneous` (an outsider cannot grow the ledger).
    public static let maximumEntries = 256

    public private(set) var start: Int64
    private var watching: Set<UsageObservation> = []
    private var watchedAny = false
    private var screenOn: Bool?
    private var locked: Bool?
    private var unlockedSince: Int64?
    private var front: UsageApp?
    private var frontSince: Int64 = 0
    private var wakes = 0
    private var unlocks = 0
    private var unlockedNanoseconds: Int64 = 0
    private var wakeSource = UsageObservation.none
    private var unlockSource = UsageObservation.none
    private var applications: [UsageApp: ApplicationTotals] = [:]
    private var applicationOrder: [UsageApp] = []
    private var notifications: [NotificationKey: Int] = [:]
    private var notificationOrder: [NotificationKey] = []

    struct ApplicationTotals: Sendable {
        var nanoseconds: Int64 = 0
        var firstUse: Int64
        var textInputSessions = 0
    }

    struct NotificationKey: Sendable, Hashable {
        let app: UsageApp
        let event: SRDeviceUsageReport.NotificationUsage.Event
    }

    static let overflowApp = UsageApp(id: nil, category: .miscellaneous)

    public init(start: Int64) { self.start = start }

    public mutating func on(_ event: UsageEvent) {
        let at = max(event.time, start)
        switch event {
        case .watching(let source, let on, _):
            if on { watching.insert(source) } else { watching.remove(source) }
            if on { watchedAny = true }
        case .screen(let on, _, let source):
            // The compositor knows the outputs' power; logind's IdleHint only guesses it from
            // input, and counted into one state it adds wakes the compositor never saw: it is the
            // fallback for sessions no compositor tells about, not a second opinion.
            if source == .logindIdleHint, watching.contains(.compositor) { break }
            if on, screenOn == false, source.rawValue != 0 {
                wakes += 1
                if wakeSource == .none { wakeSource = source }
            }
            screenOn = on
        case .locked(let isLocked, _, let source):
            if !isLocked, locked == true {
                unlocks += 1
                if unlockSource == .none { unlockSource = source }
            }
            if isLocked, let since = unlockedSince {
                unlockedNanoseconds = unlockedNanoseconds.addingSaturating(at.subtractingSaturating(since))
                unlockedSince = nil
            } else if !isLocked, unlockedSince == nil {
                unlockedSince = at
            }
            locked = isLocked
        case .foreground(let app, _):
            settleFront(at: at)
            front = app
            frontSince = at
            if let app { _ = entry(app, at: at) }
        case .notification(let app, let kind, _):
            var key = NotificationKey(app: app, event: kind)
            if notifications[key] == nil, notificationOrder.count >= Self.maximumEntries {
                key = NotificationKey(app: Self.overflowApp, event: kind)
            }
            if notifications[key] == nil { notificationOrder.append(key) }
            notifications[key, default: 0] += 1
        case .textInput:
            if let front { applications[entry(front, at: at)]?.textInputSessions += 1 }
        }
    }

    /// The app's key in `applications`, made at its first use (the overflow app past the bound).
    private mutating func entry(_ app: UsageApp, at: Int64) -> UsageApp {
        if applications[app] != nil { return app }
        let key = applicationOrder.count < Self.maximumEntries ? app : Self.overflowApp
        if applications[key] == nil {
            applications[key] = ApplicationTotals(firstUse: at)
            applicationOrder.append(key)
        }
        return key
    }

    private mutating func settleFront(at: Int64) {
        guard let front else { return }
        let key = entry(front, at: frontSince)
        let spent = at.subtractingSaturating(frontSince)
        if var totals = applications[key] {
            totals.nanoseconds = totals.nanoseconds.addingSaturating(spent)
            applications[key] = totals
        }
        frontSince = at
    }

    /// The first of `preferred` watching now: the source a count of 0 was observed by.
    private func watched(_ preferred: [UsageObservation]) -> UsageObservation {
        preferred.first { watching.contains($0) } ?? .none
    }

    /// Ends the interval at `end`: its report, or nil when no source watched in it; the ledger
    /// then counts the interval that starts at `end`.
    public mutating func close(at end: Int64) -> UsageReport? {
        settleFront(at: end)
        if let since = unlockedSince {
            unlockedNanoseconds = unlockedNanoseconds.addingSaturating(end.subtractingSaturating(since))
            unlockedSince = end
        }
        let report =
            watchedAny || !watching.isEmpty
            ? UsageReport(
                start: start, end: end, screenWakes: wakes, unlocks: unlocks, unlockedNanoseconds: unlockedNanoseconds,
                wakeSource: wakeSource != .none ? wakeSource : watched([.compositor, .logindIdleHint]),
                unlockSource: unlockSource != .none
                    ? unlockSource : watched([.logindLockedHint, .screenSaver, .compositor]),
                applications: applicationOrder.compactMap { app in
                    applications[app].map {
                        .init(
                            app: app, nanoseconds: $0.nanoseconds, relativeStart: $0.firstUse.subtractingSaturating(start),
                            textInputSessions: $0.textInputSessions)
                    }
                }.filter { $0.nanoseconds > 0 || $0.textInputSessions > 0 },
                notifications: notificationOrder.map { .init(app: $0.app, event: $0.event, count: notifications[$0] ?? 0) })
            : nil
        start = end
        frontSince = end
        // A source still watching at the boundary watches the next interval from its start.
        watchedAny = !watching.isEmpty
        (wakes, unlocks, unlockedNanoseconds) = (0, 0, 0)
        (wakeSource, unlockSource) = (.none, .none)
        applications = [:]
        applicationOrder = []
        notifications = [:]
        notificationOrder = []
        if let front { _ = entry(front, at: end) }
        return report
    }
}

/// One closed interval's counts, what a report's rows hold.
public struct UsageReport: Sendable, Equatable {
    public struct Application: Sendable, Equatable {
        public let app: UsageApp
        public let nanoseconds: Int64
        public let relativeStart: Int64
        public let textInputSessions: Int
    }

    public struct Notification: Sendable, Equatable {
        public let app: UsageApp
        public let event: SRDeviceUsageReport.NotificationUsage.Event
        public let count: Int
    }

    public let start: Int64
    public let end: Int64
    public let screenWakes: Int
    public let unlocks: Int
    public let unlockedNanoseconds: Int64
    public let wakeSource: UsageObservation
    public let unlockSource: UsageObservation
    public let applications: [Application]
    public let notifications: [Notification]
}
