import Foundation
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorTestKit
import Testing
import UsageBridge

/// deviceUsageReport through the daemon on hand-driven time (docs/device-usage.md): reports
/// close at wall-clock quarter hours, are stored and fetched like any sensor's samples under
/// consent, and an interval nothing watched comes back as a deletion record.
@Suite struct DeviceUsageHarnessTests {
    static let app = "org.sensorkit.usage-study"

    @Test(.timeLimit(.minutes(3))) func quarterHourReportsAndAnUnwatchedQuarterAreFetched() throws {
        // The fake wall clock starts 400 s into a quarter hour.
        let time = ManualTime()
        let recorder = UsageRecorder(clock: time, scheduler: time)
        let harness = try DaemonHarness(sources: [recorder], clock: time, scheduler: time) { folder in
            try DaemonHarness.writeApp(Self.app, in: folder + "/apps.d", entitlements: ["device-usage"], users: ["root"])
        }
        defer { harness.stop() }
        let app = try harness.connect(app: Self.app)
        defer { app.close() }
        // Without consent nothing is recorded for the app.
        #expect(app.call(.startRecording) { $0.sensor = SRSensor.deviceUsageReport.rawValue }.error?.code == .noAuthorization)
        try harness.grant([.deviceUsageReport], to: Self.app)
        let start = harness.now
        #expect(app.call(.startRecording) { $0.sensor = SRSensor.deviceUsageReport.rawValue }.error == nil)
        #expect(DaemonHarness.eventually { recorder.captureStatus == .recording })

        let maps = UsageApp(id: "org.gnome.Maps", category: .navigation)
        // The agent: the screen saver and the compositor, so every part of the report is observed.
        recorder.feed(.watching(.screenSaver, true, at: time.boottimeNanoseconds()))
        recorder.feed(.watching(.compositor, true, at: time.boottimeNanoseconds()))
        recorder.feed(.locked(false, at: time.boottimeNanoseconds(), from: .screenSaver))
        recorder.feed(.foreground(app: maps, at: time.boottimeNanoseconds()))
        recorder.queue.sync {}
        try time.advance(by: .seconds(500))  // the first quarter closes: a report
        recorder.feed(.watching(.screenSaver, false, at: time.boottimeNanoseconds()))
        recorder.feed(.watching(.compositor, false, at: time.boottimeNanoseconds()))
        recorder.queue.sync {}
        // The next one was watched at its start, for no time: a report and a deletion record of its
        // unwatched stretch; the last was not watched at all: a deletion record.
        try time.advance(by: .seconds(1800))

        var reports: [SRDeviceUsageReport] = []
        #expect(
            DaemonHarness.eventually {
                reports = Self.reports(app, from: start, to: harness.now)
                return reports.count == 2
            }, "\(harness.logLines().joined(separator: "\n"))")
        #expect(reports.map(\.duration) == [500, 900])
        #expect(reports[0].applicationUsageByCategory[.navigation]?.first?.usageTime == 500)
        #expect(reports[0].applicationUsageByCategory[.navigation]?.first?.bundleIdentifier == "org.gnome.Maps")
        #expect(reports[0].totalUnlockDuration == 500 && reports[0].version.hasSuffix("unlocks=screensaver"))

        var reasons: [Double] = []
        #expect(
            DaemonHarness.eventually {
                let (records, _) = DaemonHarness.fetchAll(
                    app, sensor: SRSensor.deviceUsageReport.deletionRecordSensor!, from: start, to: harness.now, timeout: 10)
                reasons = records.flatMap { $0.columns[1] }
                return reasons.count >= 2
            }, "\(harness.logLines().joined(separator: "\n"))")
        #expect(reasons == Array(repeating: Double(SRDeletionReason.systemInitiated.rawValue), count: 2), "\(reasons)")
    }

    static func reports(_ app: ReaderConnection, from: Int64, to: Int64) -> [SRDeviceUsageReport] {
        let (batches, _) = DaemonHarness.fetchAll(app, sensor: .deviceUsageReport, from: from, to: to, timeout: 10)
        var reports = DeviceUsageEndToEndTests.Reports()
        for batch in batches {
            SensorFamilies.results(batch, sensor: .deviceUsageReport, dates: SampleDates(cfOffset: 0, anchor: 0), into: &reports)
        }
        return reports.reports
    }
}
