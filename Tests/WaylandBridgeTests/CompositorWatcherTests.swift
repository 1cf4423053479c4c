import Dispatch
import Foundation
import Glibc
import SensorSimulation
import SensorSystem
import SensorTestKit
import Synchronization
import Testing

@testable import WaylandBridge

/// The watcher against a real compositor: Debian's sway, headless, with `foot` windows whose
/// focus `swaymsg` moves (docs/wayland.md, "Tests"). sway must be installed (`make test` does):
/// without it these fail, they do not skip.
@Suite(
    .serialized, .needs(.tools(HeadlessSway.tools)),
    .needs(.root("sway runs as nobody in a runtime folder handed over with chown")))
struct CompositorWatcherTests {
    /// The events a watcher delivered, as lines without their times ("foreground a", "power HEADLESS-1 on").
    final class Recorder: Sendable {
        let events = Mutex<[CompositorEvent]>([])
        let queue = DispatchQueue(label: "compositor-watcher-tests")

        var lines: [String] { events.withLock { $0.map(Self.line) } }

        static func line(_ event: CompositorEvent) -> String {
            switch event {
            case .foreground(let app, _): return "foreground \(app ?? "-")"
            case .outputPower(let output, let on, _): return "power \(output) \(on ? "on" : "off")"
            case .gone: return "gone"
            }
        }

        func watch(_ sway: HeadlessSway) throws -> CompositorWatcher {
            try CompositorWatcher(displayName: sway.display, queue: queue) { [self] event in
                events.withLock { $0.append(event) }
            }
        }

        /// Waits (bounded) until the lines are `expected`, and expects exactly that.
        func expect(_ expected: [String], _ sway: HeadlessSway, sourceLocation: SourceLocation = #_sourceLocation) {
            _ = HeadlessSway.eventually(10) { lines.count >= expected.count }
            // A little more time would show an extra event that should not be there.
            _ = HeadlessSway.eventually(0.2) { lines.count > expected.count }
            #expect(lines == expected, "sway's logs:\n\(sway.logText())", sourceLocation: sourceLocation)
        }
    }

    @Test func foregroundFollowsFocusExactlyInOrder() throws {
        let sway = try HeadlessSway()
        defer { sway.close() }
        let recorder = Recorder()
        let watcher = try recorder.watch(sway)
        defer { watcher.stop() }
        var expected = ["power HEADLESS-1 on", "foreground -"]
        recorder.expect(expected, sway)

        try sway.open(appID: "org.example.Alpha")
        expected.append("foreground org.example.Alpha")
        recorder.expect(expected, sway)
        try sway.open(appID: "org.example.Beta")
        expected.append("foreground org.example.Beta")
        recorder.expect(expected, sway)

        try sway.swaymsg(["[app_id=\"org.example.Alpha\"] focus"])
        expected.append("foreground org.example.Alpha")
        recorder.expect(expected, sway)
        // Focusing the window already in front changes nothing.
        try sway.swaymsg(["[app_id=\"org.example.Alpha\"] focus"])
        try sway.swaymsg(["[app_id=\"org.example.Beta\"] focus"])
        expected.append("foreground org.example.Beta")
        recorder.expect(expected, sway)

        // Closing the window in front hands the focus to the other, in one change.
        try sway.swaymsg(["[app_id=\"org.example.Beta\"] kill"])
        expected.append("foreground org.example.Alpha")
        recorder.expect(expected, sway)
        try sway.swaymsg(["[app_id=\"org.example.Alpha\"] kill"])
        expected.append("foreground -")
        recorder.expect(expected, sway)

        let times = recorder.events.withLock { $0 }.compactMap { event -> UInt64? in
            if case .foreground(_, let at) = event { return at }
            return nil
        }
        #expect(times == times.sorted(), "times are CLOCK_BOOTTIME, in order")
        #expect(times.allSatisfy { $0 > 0 && $0 <= UInt64(LinuxSystemClock.read(CLOCK_BOOTTIME)) })
    }

    @Test func aNewOutputIsReportedWithItsPowerMode() throws {
        let sway = try HeadlessSway()
        defer { sway.close() }
        let recorder = Recorder()
        let watcher = try recorder.watch(sway)
        defer { watcher.stop() }
        recorder.expect(["power HEADLESS-1 on", "foreground -"], sway)
        try sway.swaymsg(["create_output"])
        recorder.expect(["power HEADLESS-1 on", "foreground -", "power HEADLESS-2 on"], sway)
    }

    @Test func aCompositorThatDiesIsGoneAndANewWatcherWatchesTheNextOne() throws {
        let sway = try HeadlessSway()
        defer { sway.close() }
        let recorder = Recorder()
        let watcher = try recorder.watch(sway)
        defer { watcher.stop() }
        try sway.open(appID: "org.example.Alpha")
        recorder.expect(["power HEADLESS-1 on", "foreground -", "foreground org.example.Alpha"], sway)
        sway.kill()
        recorder.expect(["power HEADLESS-1 on", "foreground -", "foreground org.example.Alpha", "gone"], sway)

        let next = try HeadlessSway()
        defer { next.close() }
        try next.open(appID: "org.example.Beta")
        let again = Recorder()
        let second = try again.watch(next)
        defer { second.stop() }
        again.expect(["power HEADLESS-1 on", "foreground org.example.Beta"], next)
    }

    @Test func stopEndsDeliveryAndTheConnection() throws {
        let sway = try HeadlessSway()
        defer { sway.close() }
        let recorder = Recorder()
        let watcher = try recorder.watch(sway)
        recorder.expect(["power HEADLESS-1 on", "foreground -"], sway)
        watcher.stop()
        watcher.stop()
        try sway.open(appID: "org.example.Alpha")
        recorder.expect(["power HEADLESS-1 on", "foreground -"], sway)
    }

    @Test func withoutACompositorTheErrorSaysSo() throws {
        let queue = DispatchQueue(label: "no-compositor")
        #expect(throws: CompositorError.self) {
            _ = try CompositorWatcher(displayName: "/nonexistent/wayland-9", queue: queue) { _ in }
        }
        do {
            _ = try CompositorWatcher(displayName: "/nonexistent/wayland-9", queue: queue) { _ in }
        } catch let error as CompositorError {
            #expect("\(error)".contains("/nonexistent/wayland-9"))
            #expect("\(error)".contains("falls back to logind"))
        }
        // Without WAYLAND_DISPLAY (libwayland would guess wayland-0), a process of its own.
        let (status, output) = try CommandOutput.run(["/usr/bin/env", "-u", "WAYLAND_DISPLAY", Self.child])
        #expect(status == 1)
        #expect(output.contains("error: no Wayland compositor to watch: WAYLAND_DISPLAY is not set"), "\(output)")
    }

    /// The watcher's process writes nothing of a window's title: its events and its errors are
    /// searched for the secret the title held, while the secret window was in front and closed.
    @Test func aWindowTitleNeverLeavesTheWatcher() throws {
        let sway = try HeadlessSway()
        defer { sway.close() }
        let secret = "hunter2-\(UInt32.random(in: 100_000...999_999))-passphrase"
        let output = sway.folder + "/child.out"
        #expect(FileManager.default.createFile(atPath: output, contents: nil))
        let file = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        let child = try ChildProcess(
            ["/usr/bin/timeout", "-s", "KILL", "60", Self.child, sway.display], stdin: 0,
            stdout: file.fileDescriptor, stderr: file.fileDescriptor)
        try file.close()
        defer {
            if child.isRunning { kill(-child.pid, SIGKILL) }
            child.wait()
        }
        func written() -> String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
        #expect(HeadlessSway.eventually(10) { written().contains("foreground -") }, "\(written())")
        try sway.open(appID: "org.example.Mail", title: "Inbox — \(secret)")
        try sway.open(appID: "org.example.Other", title: "other")
        try sway.swaymsg(["[app_id=\"org.example.Mail\"] focus"])
        try sway.swaymsg(["[app_id=\"org.example.Mail\"] kill"])
        // The focus passing back to Other reaches the watcher as an event of its own: the
        // compositor goes only once it has (on a loaded machine it could go first).
        #expect(
            HeadlessSway.eventually(10) { written().components(separatedBy: "foreground org.example.Other\n").count == 3 },
            "\(written())")
        sway.kill()
        #expect(HeadlessSway.eventually(10) { written().contains("gone") }, "\(written())")
        child.wait()
        let lines = written().split(separator: "\n").map(String.init)
        #expect(
            lines == [
                "power HEADLESS-1 on", "foreground -", "foreground org.example.Mail", "foreground org.example.Other",
                "foreground org.example.Mail", "foreground org.example.Other", "gone",
            ])
        #expect(!written().contains(secret))
        #expect(!written().contains("hunter2"))
    }

    /// The child beside the test binary (`swift build --build-tests` builds it).
    static var child: String { binary("compositor-watch-child") }

    /// An executable built beside the test binary.
    static func binary(_ name: String) -> String {
        let test = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (test as NSString).deletingLastPathComponent + "/" + name
    }
}
