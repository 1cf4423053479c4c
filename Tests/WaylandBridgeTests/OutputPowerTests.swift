import Dispatch
import Foundation
import Glibc
import SensorSimulation
import SensorTestKit
import Testing

@testable import WaylandBridge

/// An output powering off and on, which no compositor in Debian 12 can do without a DRM device
/// (wlroots 0.15 refuses to disable a headless or nested output: docs/wayland.md §7). The
/// compositor here is `output-power-compositor`, a stand-in on Debian's libwayland-server built
/// from the same protocol XML, which sends the `mode` and `failed` events a wlroots compositor
/// sends after a DPMS commit.
@Suite(.serialized)
struct OutputPowerTests {
    /// The stand-in under `timeout`, in a scratch runtime folder, driven through its stdin.
    final class StandIn {
        let folder: String
        let display: String
        private let child: ChildProcess
        private let control: Int32

        init(arguments: [String] = []) throws {
            var template = Array("/tmp/skpower-XXXXXX".utf8CString)
            guard let made = mkdtemp(&template) else { throw POSIXError(.EIO) }
            let folder = String(cString: made)
            self.folder = folder
            var ends: [Int32] = [-1, -1]
            guard pipe(&ends) == 0 else { throw POSIXError(.EIO) }
            let output = open(folder + "/out", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            defer {
                Glibc.close(ends[0])
                Glibc.close(output)
            }
            _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
            control = ends[1]
            child = try ChildProcess(
                [
                    "/usr/bin/timeout", "-s", "KILL", "60", "/usr/bin/env", "XDG_RUNTIME_DIR=\(folder)",
                    CompositorWatcherTests.binary("output-power-compositor"),
                ] + arguments, stdin: ends[0], stdout: output, stderr: output)
            var name = ""
            let up = HeadlessSway.eventually(10) {
                name = ((try? String(contentsOfFile: folder + "/out", encoding: .utf8)) ?? "")
                return name.hasSuffix("\n")
            }
            guard up, name.hasPrefix("wayland-") else { throw POSIXError(.ETIMEDOUT) }
            display = folder + "/" + name.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        func send(_ word: String) {
            let line = Array((word + "\n").utf8)
            #expect(write(control, line, line.count) == line.count)
        }

        func close() {
            Glibc.close(control)
            if child.isRunning { kill(-child.pid, SIGKILL) }
            child.wait()
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    private func waitFor(_ recorder: CompositorWatcherTests.Recorder, _ expected: [String]) {
        _ = HeadlessSway.eventually(10) { recorder.lines.count >= expected.count }
        _ = HeadlessSway.eventually(0.2) { recorder.lines.count > expected.count }
        #expect(recorder.lines == expected)
    }

    @Test func offAndOnAreReportedOnceEachThenAFailedObjectIsForgotten() throws {
        let standIn = try StandIn()
        defer { standIn.close() }
        let recorder = CompositorWatcherTests.Recorder()
        let watcher = try CompositorWatcher(displayName: standIn.display, queue: recorder.queue) { event in
            recorder.events.withLock { $0.append(event) }
        }
        defer { watcher.stop() }
        var expected = ["power STANDIN-1 on", "foreground -"]
        waitFor(recorder, expected)
        standIn.send("off")
        expected.append("power STANDIN-1 off")
        waitFor(recorder, expected)
        standIn.send("off")  // a repeated mode, as after any commit: nothing new
        standIn.send("on")
        expected.append("power STANDIN-1 on")
        waitFor(recorder, expected)
        standIn.send("fail")  // another client took control: the object is destroyed, no mode follows
        standIn.send("off")
        standIn.send("remove")
        standIn.send("quit")
        expected.append("gone")
        waitFor(recorder, expected)
    }

    /// A compositor without the wlr toplevel protocol (GNOME's Mutter, KDE's KWin) is refused with
    /// a sentence that says so and names the fallback.
    @Test func aCompositorWithoutTheToplevelProtocolIsRefusedWithASentence() throws {
        let standIn = try StandIn(arguments: ["--without-toplevels"])
        defer { standIn.close() }
        do {
            _ = try CompositorWatcher(displayName: standIn.display, queue: DispatchQueue(label: "refused")) { _ in }
            Issue.record("a compositor without zwlr_foreign_toplevel_manager_v1 was accepted")
        } catch let error as CompositorError {
            #expect(error == .protocolNotOffered(interface: "zwlr_foreign_toplevel_manager_v1"))
            #expect("\(error)".contains("GNOME's Mutter and KDE's KWin do not"))
            #expect("\(error)".contains("falls back to logind"))
        }
    }
}
