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
    /// The stand-in (`OutputPowerStandIn`), each word it is sent written whole.
    final class StandIn {
        let server: OutputPowerStandIn
        var display: String { server.display }

        init(arguments: [String] = []) throws {
            server = try OutputPowerStandIn(
                binary: CompositorWatcherTests.binary("output-power-compositor"), arguments: arguments)
        }

        func send(_ word: String) { #expect(server.send(word)) }
        func close() { server.close() }
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
