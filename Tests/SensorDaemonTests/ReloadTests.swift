import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorTestKit
import Testing

/// `systemctl reload sensorkitd` (SIGHUP) with the real daemon recording mocked IIO hardware: apps
/// and the configuration's grants are read again while recording goes on without a gap
/// (docs/reliability.md, "The service manager").
@Suite(.serialized, .needs(.umockdev))
struct ReloadTests {
    static let ms: Int64 = 1_000_000
    static let lateApp = "org.sensorkit.reload-late"

    /// The pid of the sensorkitd serving `socket` (a child of umockdev-run, inside timeout).
    static func daemonPID(socket: String) -> pid_t? {
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry), let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else {
                continue
            }
            let arguments = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            if arguments.first?.hasSuffix("/sensorkitd") == true && arguments.contains(socket) { return pid }
        }
        return nil
    }

    @Test(.timeLimit(.minutes(3))) func sighupReloadsAppsAndGrantsWithoutLosingASample() throws {
        let run = try IIODaemonRun()
        defer { run.stop() }
        // First run: the app's stake, so the second run records from its first scan.
        try run.stakeInAFirstRun([.accelerometer], device: IIOEndToEndTests.bmi160)

        // 300 scans at 100 Hz, delivered over about 2.4 s; the reload lands in the middle.
        let start = boottimeNow()
        let scans = BMI160Scan.stream(count: 300, start: start, period: 10 * Self.ms)
        let script = try run.write("stream.script", BMI160Scan.script(scans, perLine: 5, delay: 40))
        try run.startUnderUmockdevRun(device: IIOEndToEndTests.bmi160, scripts: ["/dev/iio:device0": script])
        let app = try run.connect()
        let (_, anchor) = try run.timeline(app)
        let from = anchor + start - 1_000 * Self.ms
        #expect(
            try IIODaemonRun.eventually(15) {
                run.fetch(app, SRSensor.accelerometer.rawValue, from: from, to: try run.timeline(app).now).batch.count >= 30
            },
            "recording did not start\n\(run.log)")

        // A second app is installed and granted while the daemon runs; before the reload it is unknown.
        try DaemonHarness.writeApp(
            Self.lateApp, in: run.folder + "/apps.d", entitlements: ["motion-accelerometer"],
            users: [String(getuid())])
        #expect(throws: (any Error).self) { try ReaderConnection(socketPath: run.socket, app: Self.lateApp) }
        let config = try String(contentsOfFile: run.folder + "/sensorkitd.conf", encoding: .utf8)
        try (config + "\n[grant \(Self.lateApp)]\nsensors = accelerometer\n")
            .write(toFile: run.folder + "/sensorkitd.conf", atomically: true, encoding: .utf8)

        let pid = try #require(Self.daemonPID(socket: run.socket), "no sensorkitd process\n\(run.log)")
        let beforeReload = run.fetch(app, SRSensor.accelerometer.rawValue, from: from, to: try run.timeline(app).now).batch.count
        #expect(kill(pid, SIGHUP) == 0)
        #expect(IIODaemonRun.eventually(10) { run.log.contains("reloaded: 2 app(s)") }, "\(run.log)")
        #expect(kill(pid, 0) == 0, "the daemon survived SIGHUP\n\(run.log)")
        #expect(beforeReload < scans.count, "the reload must land while scans are still arriving (\(beforeReload) before it)")

        let late = try ReaderConnection(socketPath: run.socket, app: Self.lateApp)
        let lateStatus = late.call(.status) { $0.sensor = SRSensor.accelerometer.rawValue }
        #expect(
            lateStatus.states?.first?.authorizationStatus == SRAuthorizationStatus.authorized.rawValue,
            "the reloaded [grant] applies: \(lateStatus)")
        late.close()

        var accel = Fetched()
        let complete = try IIODaemonRun.eventually(15) {
            accel = run.fetch(app, SRSensor.accelerometer.rawValue, from: from, to: try run.timeline(app).now).batch
            return accel.count >= scans.count
        }
        #expect(complete && accel.count == scans.count, "got \(accel.count) of \(scans.count)\n\(run.log)")
        #expect(accel.sensorTimes == scans.map { anchor + $0.timestamp }, "every scan once, in order")
        let records = run.fetch(app, IIOEndToEndTests.accelTombstones, from: from, to: try run.timeline(app).now).batch
        #expect(records.count == 0, "no deletion record: nothing was lost\n\(records)\n\(run.log)")
    }
}
