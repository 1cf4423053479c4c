import SensorKitModel
import Testing

@testable import UsageBridge

@Suite struct UsageLedgerTests {
    static let s: Int64 = 1_000_000_000
    let maps = UsageApp(id: "org.gnome.Maps", category: .navigation)
    let chat = UsageApp(id: "im.dino.Dino", category: .socialNetworking)

    @Test func anIntervalCountsWakesUnlocksTimeInFrontAndNotifications() throws {
        let s = Self.s
        var ledger = UsageLedger(start: 0)
        ledger.on(.watching(.logindLockedHint, true, at: 0))
        ledger.on(.watching(.logindIdleHint, true, at: 0))
        ledger.on(.locked(true, at: 0, from: .logindLockedHint))
        ledger.on(.screen(on: false, at: 0, from: .logindIdleHint))
        ledger.on(.screen(on: true, at: 10 * s, from: .logindIdleHint))
        ledger.on(.locked(false, at: 20 * s, from: .logindLockedHint))
        // The lock signal that follows the hint changes nothing: the state is already unlocked.
        ledger.on(.locked(false, at: 21 * s, from: .logindLockSignal))
        ledger.on(.foreground(app: maps, at: 30 * s))
        ledger.on(.textInput(at: 40 * s))
        ledger.on(.notification(app: chat, event: .received, at: 50 * s))
        ledger.on(.notification(app: chat, event: .received, at: 51 * s))
        ledger.on(.notification(app: chat, event: .defaultAction, at: 52 * s))
        ledger.on(.foreground(app: chat, at: 90 * s))
        ledger.on(.locked(true, at: 100 * s, from: .logindLockedHint))
        ledger.on(.foreground(app: nil, at: 100 * s))
        let closed = ledger.close(at: 900 * s)
        let report = try #require(closed)
        #expect(report.start == 0 && report.end == 900 * s)
        #expect(report.screenWakes == 1 && report.unlocks == 1 && report.unlockedNanoseconds == 80 * s)
        #expect(report.wakeSource == .logindIdleHint && report.unlockSource == .logindLockedHint)
        #expect(
            report.applications == [
                .init(app: maps, nanoseconds: 60 * s, relativeStart: 30 * s, textInputSessions: 1),
                .init(app: chat, nanoseconds: 10 * s, relativeStart: 90 * s, textInputSessions: 0),
            ])
        #expect(
            report.notifications == [
                .init(app: chat, event: .received, count: 2), .init(app: chat, event: .defaultAction, count: 1),
            ])
    }

    @Test func stateCarriesIntoTheNextIntervalAndAnUnwatchedOneHasNoReport() throws {
        let s = Self.s
        var ledger = UsageLedger(start: 0)
        ledger.on(.watching(.screenSaver, true, at: 0))
        ledger.on(.locked(false, at: 0, from: .screenSaver))
        ledger.on(.foreground(app: maps, at: 0))
        _ = ledger.close(at: 900 * s)
        // Still unlocked and Maps still in front: the whole next interval counts.
        let closedNext = ledger.close(at: 1800 * s)
        let next = try #require(closedNext)
        #expect(next.unlockedNanoseconds == 900 * s && next.unlocks == 0 && next.unlockSource == .screenSaver)
        #expect(next.applications.map(\.nanoseconds) == [900 * s] && next.applications[0].relativeStart == 0)
        ledger.on(.watching(.screenSaver, false, at: 1800 * s))
        // Watched for a moment at its start, so this one still reports; the next nobody watched.
        let third = ledger.close(at: 2700 * s)
        let fourth = ledger.close(at: 3600 * s)
        #expect(third != nil && fourth == nil)
    }

    @Test func anOutsiderCannotGrowTheLedgerPastItsBound() throws {
        var ledger = UsageLedger(start: 0)
        ledger.on(.watching(.compositor, true, at: 0))
        for i in 0..<(UsageLedger.maximumEntries * 4) {
            let app = UsageApp(id: "app\(i)", category: .games)
            ledger.on(.foreground(app: app, at: Int64(i) * 1_000))
            ledger.on(.notification(app: app, event: .received, at: Int64(i) * 1_000))
        }
        let closed = ledger.close(at: Int64(UsageLedger.maximumEntries * 4) * 1_000)
        let report = try #require(closed)
        #expect(report.applications.count == UsageLedger.maximumEntries + 1)
        #expect(report.notifications.count == UsageLedger.maximumEntries + 1)
        #expect(report.notifications.last?.app == UsageApp(id: nil, category: .miscellaneous))
        #expect(report.notifications.reduce(0) { $0 + $1.count } == UsageLedger.maximumEntries * 4)
    }

    @Test func unnamableAppsAreReportedUnnamed() {
        #expect(UsageApp(id: "a window title: secret", category: .games).id == nil)
        #expect(UsageApp(id: "org.gnome.Maps", category: .navigation).id == "org.gnome.Maps")
    }

    /// docs/device-usage.md: the compositor's output power counts where an agent reports it,
    /// logind's IdleHint only where none does — an idle session whose outputs stay on is no wake.
    @Test func aWatchingCompositorOutranksLogindsIdleHint() throws {
        let s = Self.s
        var ledger = UsageLedger(start: 0)
        ledger.on(.watching(.logindIdleHint, true, at: 0))
        ledger.on(.watching(.compositor, true, at: 0))
        ledger.on(.screen(on: true, at: 0, from: .compositor))
        // logind says idle and active again twice; the compositor's outputs went off and on once.
        for second in [10, 30] as [Int64] {
            ledger.on(.screen(on: false, at: second * s, from: .logindIdleHint))
            ledger.on(.screen(on: true, at: (second + 5) * s, from: .logindIdleHint))
        }
        ledger.on(.screen(on: false, at: 50 * s, from: .compositor))
        ledger.on(.screen(on: true, at: 60 * s, from: .compositor))
        let closed = ledger.close(at: 900 * s)
        let watched = try #require(closed)
        #expect(watched.screenWakes == 1 && watched.wakeSource == .compositor)

        // The compositor is not watched any more: logind's idle hint counts again.
        ledger.on(.watching(.compositor, false, at: 1000 * s))
        ledger.on(.screen(on: false, at: 1010 * s, from: .logindIdleHint))
        ledger.on(.screen(on: true, at: 1020 * s, from: .logindIdleHint))
        let closedNext = ledger.close(at: 1800 * s)
        let fallback = try #require(closedNext)
        #expect(fallback.screenWakes == 1 && fallback.wakeSource == .logindIdleHint)
    }

    @Test func aSetIntervalIsAlignedToItsWallClockMultiples() {
        // 7 s past a multiple of 10 s: 3 s to go; on a multiple, a whole interval.
        let (s, length) = (Self.s, 10 * Self.s)
        #expect(UsageSamples.nextBoundary(boot: 500, realtime: 1_000 * length + 7 * s, length: length) == 500 + 3 * s)
        #expect(UsageSamples.nextBoundary(boot: 0, realtime: 4 * length, length: length) == length)
    }

    @Test func quarterHoursAreWallClockAligned() {
        let q = UsageSamples.intervalNanoseconds
        // Wall clock 10 min past a quarter hour (plus whole days): 5 minutes to go.
        #expect(UsageSamples.nextBoundary(boot: 1_000, realtime: 1_000_000 * q + 600 * Self.s) == 1_000 + 300 * Self.s)
        #expect(UsageSamples.nextBoundary(boot: 0, realtime: 5 * q) == q)
    }
}
