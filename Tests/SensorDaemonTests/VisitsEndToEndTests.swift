import AppleStyleStudy
import Foundation
import Glibc
import LocationBridge
import RegexBuilder
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import SensorTestKit
import Testing

/// The real `sensorkitd` and the real `sensorkit-session` (docs/visits.md): logind (dbusmock) and
/// the GeoClue stand-in on a private bus the daemon and the agent take for their system bus. The
/// scripted day, moved by whole days to end just before now, is replayed fix by fix; a study app
/// then fetches, through `SRSensorReader` and `SRFetchRequest`, exactly the visits the agent's
/// tracker finds with the agent's own place key — and no byte the daemon or the agent wrote, nor
/// any frame the app was sent, holds a coordinate.
@Suite(.serialized) struct VisitsEndToEndTests {
    static let template = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/dbus/geoclue2_standin.py").path
    static let day: Int64 = 86_400 * 1_000_000_000

    @Test(
        .needs(
            .tools([
                (PrivateBus.daemonPath, "dbus-daemon"), ("/usr/bin/busctl", "systemd"), (TestEnvironment.python, "python3"),
                ("/usr/bin/setpriv", "util-linux"),
            ])), .timeLimit(.minutes(3)))
    func theScriptedDayComesBackAsExactlyItsVisitsAndNoCoordinateIsAnywhere() throws {
        let rig = try DeviceUsageRig(
            sessionUID: getuid(), entitlements: ["visits"], grants: "visits", geoclue: true)
        defer { rig.stop() }
        let run = rig.run
        let app = try run.connect()
        defer { app.close() }
        let (startSR, _) = try run.timeline(app)
        try run.startRecording(app, .visits)
        #expect(IIODaemonRun.eventually(15) { run.log.contains("seat0's active session is") }, "\(run.log)")
        // The study's labels for the day's places, in the agent's owner-only places file.
        let labels = run.folder + "/agent-config/sensorkit/places"
        try FileManager.default.createDirectory(
            atPath: run.folder + "/agent-config/sensorkit", withIntermediateDirectories: true)
        try Self.labelsText.write(toFile: labels, atomically: false, encoding: .utf8)
        chmod(labels, 0o600)
        // Every byte the agent sends the daemon passes through a relay that keeps a copy.
        let relay = try ByteRecordingRelay(path: run.folder + "/agent-relay.sock", target: run.socket)
        defer { relay.stop() }
        let (agent, agentLog) = try rig.startAgent(socket: relay.path)
        let agentLogText = { (try? String(contentsOfFile: agentLog, encoding: .utf8)) ?? "" }
        try #require(
            IIODaemonRun.eventually(15) { agentLogText().contains("location: watching GeoClue as sensorkit-session") },
            "\(agentLogText())\n\(run.log)")
        #expect(agent.isRunning)

        // Whole days keep the nights where they were (the agent's time zone is UTC).
        let scripted = ScriptedDay()
        let now = Int64(Date().timeIntervalSince1970 * 1e9)
        let shift = (now - scripted.fixes.last!.time) / Self.day * Self.day
        let fixes = scripted.fixes.map {
            LocationFix(latitude: $0.latitude, longitude: $0.longitude, accuracy: $0.accuracy, time: $0.time + shift)
        }
        for (index, fix) in fixes.enumerated() {
            let accepted = try rig.system(
                "call", "org.freedesktop.GeoClue2", "/org/freedesktop/GeoClue2/Manager", "org.freedesktop.DBus.Mock", "Fix",
                "dddtt", "\(fix.latitude)", "\(fix.longitude)", "\(fix.accuracy)", "\(fix.time / 1_000_000_000)",
                "\(fix.time % 1_000_000_000 / 1_000)")
            #expect(accepted.contains("true"), "the agent's GeoClue client was not active")
            // One at a time: a flood beyond a few updates is dropped by design.
            let read = "GetAll /org/freedesktop/GeoClue2/Client/1/Location/\(index + 1) "
            try #require(
                IIODaemonRun.eventually(10) { rig.systemLog().contains(read) }, "fix \(index) was not read\n\(agentLogText())")
        }

        // What the agent's tracker makes of the day with the agent's key.
        let keyText = try String(contentsOfFile: run.folder + "/agent-state/sensorkit/place-key", encoding: .utf8)
        let mode =
            try FileManager.default.attributesOfItem(atPath: run.folder + "/agent-state/sensorkit/place-key")[
                .posixPermissions] as? Int
        #expect(mode == 0o600)
        // The place book the agent keeps for its next start: owner-only beside the key, its places
        // the tracker's (work, gym and home; the stay in progress at work again is no visit yet).
        let book = run.folder + "/agent-state/sensorkit/place-book"
        #expect(
            IIODaemonRun.eventually(10) {
                PlaceBookText.decode((try? String(contentsOfFile: book, encoding: .utf8)) ?? "").places.count == 3
            })
        #expect(try FileManager.default.attributesOfItem(atPath: book)[.posixPermissions] as? Int == 0o600)
        let hex = Array(keyText.trimmingCharacters(in: .whitespacesAndNewlines))
        let key = PlaceKey(
            k0: try #require(UInt64(String(hex[0..<16]), radix: 16)), k1: try #require(UInt64(String(hex[16..<32]), radix: 16)))
        var tracker = VisitTracker(key: key, labels: PlaceLabelList.parse(Self.labelsText).labels)
        let expected = fixes.compactMap { tracker.add($0) }
        try #require(expected.count == 4)
        // The labels name the places; distances are from the labelled home, as scripted (the
        // fixes' noise moves a centroid by metres).
        #expect(expected.map(\.locationCategory) == [.home, .work, .gym, .home])
        let scriptedDistances = [
            0, ScriptedDay.distance(ScriptedDay.home, ScriptedDay.work),
            ScriptedDay.distance(ScriptedDay.home, ScriptedDay.gym), 0,
        ]
        for (visit, distance) in zip(expected, scriptedDistances) {
            #expect(abs(visit.distanceFromHome - distance) < 15, "\(visit.distanceFromHome)")
        }
        #expect(agentLogText().contains("location: 3 labelled place(s) from"))

        #expect(
            IIODaemonRun.eventually(15) {
                (try? run.devices())?.first { $0.source == "session:visits" }?.details["visits"] == "4"
            }, "\((try? run.devices()) ?? [])\n\(agentLogText())\n\(run.log)")
        // Fetched by the study code as Apple's documentation writes it, run as an app of its own,
        // and read back from what it printed. The store's writer commits on its own time: fetch
        // until the fourth is there.
        var printed: [String] = []
        var fetched: [SRVisit] = []
        #expect(
            IIODaemonRun.eventually(15) {
                printed = (try? StudyApp(run: run).fetchLastHour(.visits)) ?? []
                fetched = printed.compactMap(Self.visit(printed:))
                return fetched.count >= 4
            })
        try #require(fetched.count == 4 && printed.count == 4, "\(printed)\n\(run.log)")
        #expect(fetched.map(\.identifier) == expected.map(\.identifier))
        #expect(fetched.map(\.locationCategory) == expected.map(\.locationCategory))
        #expect(fetched.map(\.distanceFromHome) == expected.map(\.distanceFromHome))
        #expect(fetched[0].identifier == fetched[3].identifier && fetched[0].arrivalDateInterval.start == .distantPast)
        // Bounds crossed two clocks (the agent's wall clock, the daemon's boot clock): a second at most.
        func near(_ a: Date, _ b: Date) -> Bool { a == b || abs(a.timeIntervalSince(b)) < 1 }
        for (got, want) in zip(fetched, expected) {
            for (a, b) in [
                (got.arrivalDateInterval, want.arrivalDateInterval), (got.departureDateInterval, want.departureDateInterval),
            ] {
                #expect(near(a.start, b.start) && near(a.end, b.end), "\(a) vs \(b)")
            }
        }
        for (visit, truth) in zip(fetched, scripted.truths) {
            let date = { (ns: Int64) in Date(timeIntervalSince1970: Double(ns + shift) / 1e9) }
            if let arrival = truth.arrival { #expect(visit.arrivalDateInterval.contains(date(arrival)), "\(truth.place)") }
            #expect(visit.departureDateInterval.contains(date(truth.departure)), "\(truth.place)")
        }

        // Every byte written: the store, the daemon's and the agent's logs, the frames sent to the
        // app, and what the agent sent the daemon (and heard back) through the relay.
        var frames: [UInt8] = []
        let (to, _) = try run.timeline(app)
        let raw: [SRVisit] = ModemEndToEndTests.results(app, .visits, from: startSR, to: to, frames: &frames)
        #expect(raw.count == 4 && !frames.isEmpty)
        rig.stop()
        relay.stop()
        let (agentSent, agentHeard) = (relay.bytesSent, relay.bytesReceived)
        // The four visits crossed the relay: their identifiers are in what the agent sent.
        for visit in expected {
            #expect(KeyboardEndToEndTests.contains(agentSent, Array(visit.identifier.uuidString.utf8)))
        }
        #expect(relay.recordedEverything)
        var written: [(String, [UInt8])] = [("frames", frames), ("agent → daemon", agentSent), ("daemon → agent", agentHeard)]
        let state = run.folder + "/state"
        for file in FileManager.default.enumerator(atPath: state)?.compactMap({ $0 as? String }) ?? [] {
            var isDirectory: ObjCBool = false
            let path = state + "/" + file
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
                continue
            }
            written.append((path, Array(try Data(contentsOf: URL(fileURLWithPath: path)))))
        }
        written.append((run.logPath, Array(try Data(contentsOf: URL(fileURLWithPath: run.logPath)))))
        written.append((agentLog, Array(try Data(contentsOf: URL(fileURLWithPath: agentLog)))))
        #expect(written.count >= 5)
        let needles = Self.coordinates(fixes)
        for (name, bytes) in written {
            for (what, needle) in needles where KeyboardEndToEndTests.contains(bytes, needle) {
                Issue.record("\(name) holds \(what)")
            }
        }
    }

    /// The study's places file for the scripted day: home set by the study, work and the gym.
    static let labelsText = """
        # the scripted day's places
        home \(ScriptedDay.home.latitude),\(ScriptedDay.home.longitude)
        work \(ScriptedDay.work.latitude),\(ScriptedDay.work.longitude),150
        gym \(ScriptedDay.gym.latitude),\(ScriptedDay.gym.longitude)
        """

    /// The visit the study code printed (`StudyRecorder.line(for:)`), read back.
    static func visit(printed line: String) -> SRVisit? {
        let number = #/(-?[0-9.e+]+)/#
        let shape = Regex {
            "visit: "
            Capture { OneOrMore(.anyOf("0123456789ABCDEF-")) }
            ", category "
            Capture { OneOrMore(.digit) }
            ", "
            number
            " m from home, arrived "
            number
            "..."
            number
            ", left "
            number
            "..."
            number
        }
        guard let match = line.wholeMatch(of: shape), let id = UUID(uuidString: String(match.1)),
            let category = Int(match.2).flatMap(SRVisit.LocationCategory.init(rawValue:))
        else { return nil }
        let values = [match.3, match.4, match.5, match.6, match.7].compactMap { Double(String($0)) }
        guard values.count == 5 else { return nil }
        let date = { Date(timeIntervalSince1970: values[$0]) }
        return SRVisit(
            distanceFromHome: values[0], arrivalDateInterval: DateInterval(start: date(1), end: date(2)),
            departureDateInterval: DateInterval(start: date(3), end: date(4)), locationCategory: category, identifier: id)
    }

    /// The places and the fixes as every form a leak could take: text to 3 decimals, micro-degrees,
    /// `Double` and `Float` bit patterns, and each fix's coordinates as printed.
    static func coordinates(_ fixes: [LocationFix]) -> [(String, [UInt8])] {
        var needles: [(String, [UInt8])] = []
        for place in [ScriptedDay.home, ScriptedDay.work, ScriptedDay.gym] {
            for value in [place.latitude, place.longitude] {
                needles.append(("\(value)", Array(String(format: "%.3f", value).utf8)))
                needles.append(("\(value) ×1e6", Array(String(Int(value * 1e6)).utf8)))
                withUnsafeBytes(of: value.bitPattern) { needles.append(("\(value) bits", Array($0))) }
                withUnsafeBytes(of: Float(value).bitPattern) { needles.append(("\(value) float bits", Array($0))) }
            }
        }
        for fix in fixes {
            withUnsafeBytes(of: fix.latitude.bitPattern) { needles.append(("fix latitude bits", Array($0))) }
            needles.append(("fix latitude", Array("\(fix.latitude)".utf8)))
            needles.append(("fix longitude", Array("\(fix.longitude)".utf8)))
        }
        return needles
    }
}
