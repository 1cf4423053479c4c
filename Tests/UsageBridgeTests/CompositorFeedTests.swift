import Dispatch
import Foundation
import SensorKitModel
import SensorSimulation
import SensorSystem
import SensorTestKit
import Synchronization
import Testing

@testable import SessionAgent

/// The agent fed by a real compositor: Debian's sway, headless, with `foot` windows — through
/// `CompositorFeed` and `SessionAgent` to the usage events the daemon would get, and again after
/// the compositor is killed and started anew (docs/device-usage.md, "The compositor").
@Suite(
    .serialized, .needs(.tools(HeadlessSway.tools)),
    .needs(.root("sway runs as nobody in a runtime folder handed over with chown")))
struct CompositorFeedTests {
    final class Sent: Sendable {
        let events = Mutex<[WireUsageEvent]>([])
        let logs = Mutex<[String]>([])

        /// The events as lines without categories ("watching compositor on", "foreground a").
        var lines: [String] {
            events.withLock { events in
                events.map { event in
                    switch event.kind {
                    case .watching, .screen, .locked: "\(event.kind) \(event.source ?? "-") \(event.on == true ? "on" : "off")"
                    default: "\(event.kind) \(event.app ?? "-")"
                    }
                }
            }
        }

        func expect(_ expected: [String], _ sway: HeadlessSway, sourceLocation: SourceLocation = #_sourceLocation) {
            _ = HeadlessSway.eventually(15) { lines.count >= expected.count }
            _ = HeadlessSway.eventually(0.2) { lines.count > expected.count }
            #expect(
                lines == expected, "logs: \(logs.withLock { $0 })\nsway's logs:\n\(sway.logText())",
                sourceLocation: sourceLocation)
        }
    }

    @Test func theAppInFrontIsNamedWithItsCategoryAndWatchingResumesAfterARestart() throws {
        let sway = try HeadlessSway()
        defer { sway.close() }
        let applications = sway.folder + "/applications"
        try FileManager.default.createDirectory(atPath: applications, withIntermediateDirectories: true)
        try "[Desktop Entry]\nName=Maps\nCategories=Utility;Maps;\n".write(
            toFile: applications + "/org.example.Maps.desktop", atomically: true, encoding: .utf8)

        let sent = Sent()
        let queue = DispatchQueue(label: "compositor-feed-tests")
        let agent = SessionAgent(catalog: DesktopCatalog(folders: [applications]), queue: queue) { events in
            sent.events.withLock { $0 += events }
        }
        let feed = CompositorFeed(
            display: sway.display, agent: agent, queue: queue, firstRetry: .milliseconds(100), lastRetry: .milliseconds(400)
        ) { line in sent.logs.withLock { $0.append(line.text) } }
        feed.start()
        defer { feed.stop() }
        var expected = ["watching compositor on", "screen compositor on", "foreground -"]
        sent.expect(expected, sway)

        try sway.open(appID: "org.example.Maps", title: "a private window title")
        expected.append("foreground org.example.Maps")
        sent.expect(expected, sway)
        let maps = sent.events.withLock { $0.last }
        #expect(maps?.category == Int(DeviceUsageFamily.categoryIndex(.navigation)))

        // The compositor dies: nothing is in front and the agent says it no longer watches.
        let display = sway.display
        sway.kill()
        expected += ["foreground -", "watching compositor off"]
        sent.expect(expected, sway)

        // A new compositor on the same display is watched again without the agent restarting.
        try sway.restart()
        try #require(sway.display == display, "sway took another display name")
        expected += ["watching compositor on", "screen compositor on", "foreground -"]
        sent.expect(expected, sway)
        #expect(sent.logs.withLock { $0.contains("the compositor went away") })

        // No window title reached an event.
        let encoded = try JSONEncoder().encode(sent.events.withLock { $0 })
        #expect(String(decoding: encoded, as: UTF8.self).contains("private") == false)
    }

    @Test func withoutACompositorItKeepsTryingAndSaysWhyOnce() throws {
        let sent = Sent()
        let queue = DispatchQueue(label: "compositor-feed-tests-absent")
        let agent = SessionAgent(catalog: DesktopCatalog(folders: []), queue: queue) { events in
            sent.events.withLock { $0 += events }
        }
        let feed = CompositorFeed(
            display: "/nonexistent/wayland-9", agent: agent, queue: queue, firstRetry: .milliseconds(20),
            lastRetry: .milliseconds(40)
        ) { line in sent.logs.withLock { $0.append(line.text) } }
        feed.start()
        Thread.sleep(forTimeInterval: 0.5)
        feed.stop()
        #expect(sent.lines.isEmpty)
        let logs = sent.logs.withLock { $0 }
        #expect(logs.count == 1, "\(logs)")
        #expect(logs.first?.hasPrefix("not watching the compositor (trying again)") == true)
    }

    /// A session without Wayland, or a compositor without the protocols, will not change: the
    /// feed says so once and stops trying (an idle agent makes no wake-ups).
    @Test func withoutAWaylandSessionOrTheProtocolsItGivesUpAtOnce() {
        #expect(CompositorFeed.worthRetrying(.noDisplay) == false)
        #expect(CompositorFeed.worthRetrying(.protocolNotOffered(interface: "zwlr_output_power_manager_v1")) == false)
        #expect(CompositorFeed.worthRetrying(.cannotConnect(display: "wayland-0", errno: 111)))
        #expect(CompositorFeed.worthRetrying(.noAnswer(display: "wayland-0")))
    }
}
