import Foundation
import Testing

@testable import SensorKitModel

@Suite struct DeviceUsageFamilyTests {
    @Test func desktopIDsRoundTripAndHostileNamesAreRefused() {
        for id in ["org.gnome.Maps", "firefox-esr", "a", String(repeating: "x_Y.9-", count: 10) + "abc"] {
            let words = DesktopIDCode.encode(id)
            #expect(words?.count == DesktopIDCode.words)
            #expect(DesktopIDCode.decode(words!.map(Double.init)) == id, "\(id)")
        }
        for hostile in ["", "a b", "tab\there", "ünïcode", "semi;colon", "path/x", String(repeating: "a", count: 64)] {
            #expect(DesktopIDCode.encode(hostile) == nil, "\(hostile)")
        }
        #expect(DesktopIDCode.decode(Array(repeating: 0, count: 9)) == nil)
        #expect(DesktopIDCode.decode([0.5]) == nil)
        #expect(DesktopIDCode.decode([-1]) == nil)
        #expect(DesktopIDCode.decode([.nan]) == nil)
        #expect(DesktopIDCode.decode([Double(1 << 50)]) == nil)
        // A gap before a character, or a control byte: a damaged or hostile word.
        #expect(DesktopIDCode.decode([Double(Int64(UInt8(ascii: "a")) << 7)]) == nil)
        #expect(DesktopIDCode.decode([1]) == nil)
    }

    struct Collected: FetchResultBuilder {
        var results: [(AnyObject, Int)] = []
        mutating func each(_ make: (Int) -> AnyObject) { Issue.record("a report is a run of rows") }
        mutating func batch(_ samples: SampleList) { Issue.record("a report is a run of rows") }
        mutating func groups(_ runs: [Range<Int>], _ make: (Range<Int>) -> AnyObject) {
            results += runs.map { (make($0), $0.upperBound - 1) }
        }
    }

    /// Rows of two reports: the second's rows come in another order (ties may), one row names an
    /// app that cannot be decoded.
    @Test func rowsOfOneTimeBecomeOneReport() throws {
        typealias C = DeviceUsageFamily.Column
        let minute: Double = 60
        var rows: [[C: Double]] = []
        func app(_ id: String?) -> [C: Double] {
            let words = id.flatMap(DesktopIDCode.encode) ?? Array(repeating: 0, count: 9)
            return Dictionary(uniqueKeysWithValues: zip(C.appWords, words.map(Double.init)))
        }
        rows.append([
            .entry: 0, .duration: 15 * minute, .screenWakes: 3, .unlocks: 2, .unlockDuration: 4 * minute,
            .wakeSource: 2, .unlockSource: 3,
        ])
        rows.append(
            app("org.gnome.Maps").merging([
                .entry: 1, .category: 11, .usageTime: 90, .relativeStartTime: 30,
                .textInputSessions: 2,
            ]) { a, _ in a })
        rows.append(app("org.gnome.Maps").merging([.entry: 2, .category: 11, .event: 1, .events: 3]) { a, _ in a })
        rows.append(app(nil).merging([.entry: 2, .category: 23, .event: 4, .events: 1]) { a, _ in a })
        rows.append(app("org.gnome.Calculator").merging([.entry: 1, .category: 3, .usageTime: 5]) { a, _ in a })
        rows.append([.entry: 0, .duration: 15 * minute, .unlockSource: 4])
        let times: [Int64] = [900e9, 900e9, 900e9, 900e9, 1800e9, 1800e9].map { Int64($0) }
        let columns = C.allCases.map { column in rows.map { $0[column] ?? 0 } }
        let frame = SampleBatchFrame(
            requestID: 1, layout: .deviceUsage, sensorTimes: times, writeTimes: times, columns: columns, ragged: [])
        var collected = Collected()
        SensorFamilies.results(frame, sensor: .deviceUsageReport, dates: SampleDates(cfOffset: 0, anchor: 0), into: &collected)
        try #require(collected.results.count == 2)
        let first = try #require(collected.results[0].0 as? SRDeviceUsageReport)
        #expect(first.duration == 900 && first.totalScreenWakes == 3 && first.totalUnlocks == 2)
        #expect(first.totalUnlockDuration == 240)
        #expect(first.version == "linux-1 wakes=logind-idle-hint unlocks=logind-locked-hint")
        let maps = try #require(first.applicationUsageByCategory[.navigation]?.first)
        #expect(maps.bundleIdentifier == "org.gnome.Maps" && maps.usageTime == 90 && maps.relativeStartTime == 30)
        #expect(maps.textInputSessions.count == 2 && maps.reportApplicationIdentifier == "0.0")
        #expect(first.notificationUsageByCategory[.navigation]?.map(\.event) == [.received, .received, .received])
        #expect(first.notificationUsageByCategory[.miscellaneous]?.map(\.bundleIdentifier) == [nil])
        #expect(first.webUsageByCategory.isEmpty)
        let second = try #require(collected.results[1].0 as? SRDeviceUsageReport)
        #expect(collected.results[1].1 == 5)
        #expect(second.version == "linux-1 wakes=none unlocks=screensaver")
        #expect(second.applicationUsageByCategory[.utilities]?.first?.bundleIdentifier == "org.gnome.Calculator")
    }

    @Test func hostileCategoriesAndCountsNeverTrap() {
        #expect(DeviceUsageFamily.categoryKey(-1) == .miscellaneous)
        #expect(DeviceUsageFamily.categoryKey(29) == .miscellaneous)
        #expect(DeviceUsageFamily.categoryKey(.infinity) == .miscellaneous)
        #expect(DeviceUsageFamily.categoryKey(0) == .games)
        #expect(DeviceUsageFamily.categoryIndex(.stickers) == 28)
    }
}
