import Dispatch
import Foundation
import SensorKitModel
import Synchronization
import SystemBus
import Testing

@testable import SessionAgent

@Suite struct SessionAgentTests {
    @Test func desktopEntriesAreReadAsHostileInput() {
        let entry =
            "# comment\n[Desktop Entry]\nName=Maps\nCategories=Utility;Maps;X-GNOME-Utilities;\n[Desktop Action x]\nCategories=Game;\n"
        #expect(DesktopEntry.categories(Array(entry.utf8)) == ["Utility", "Maps", "X-GNOME-Utilities"])
        #expect(DesktopEntry.categories(Array("[Desktop Entry]\nHidden=true\nCategories=Game;\n".utf8)) == nil)
        #expect(DesktopEntry.categories(Array("Categories=Game;\n".utf8)) == nil)
        let hostile = "[Desktop Entry]\nCategories=Game;../../etc;\u{0}x;" + String(repeating: "A", count: 100) + ";Maps\n"
        #expect(DesktopEntry.categories(Array(hostile.utf8)) == ["Game", "Maps"])
        let many = "[Desktop Entry]\nCategories=" + (0..<100).map { "C\($0)" }.joined(separator: ";") + "\n"
        #expect(DesktopEntry.categories(Array(many.utf8))?.count == DesktopEntry.maximumCategories)
        // Past the byte bound nothing more is looked at.
        let late = "[Desktop Entry]\n" + String(repeating: "#\n", count: DesktopEntry.maximumBytes) + "Categories=Game;\n"
        #expect(DesktopEntry.categories(Array(late.utf8)) == [])
    }

    @Test func categoriesFollowTheTable() {
        #expect(CategoryTable.key(["Utility", "Maps"]) == .navigation)
        #expect(CategoryTable.key(["Network", "InstantMessaging"]) == .socialNetworking)
        #expect(CategoryTable.key(["Office"]) == .productivity)
        #expect(CategoryTable.key(["Game", "KidsGame"]) == .kids)
        #expect(CategoryTable.key(["X-Unknown"]) == .miscellaneous)
        #expect(CategoryTable.key([]) == .miscellaneous)
    }

    func message(
        _ kind: DBusMonitoredMessage.Kind, serial: UInt64 = 1, reply: UInt64? = nil, sender: String? = ":1.5",
        destination: String? = nil, interface: String?, member: String?, _ arguments: [Int: DBusValue]
    ) -> DBusMonitoredMessage {
        DBusMonitoredMessage(
            kind: kind, serial: serial, replySerial: reply, sender: sender, destination: destination, path: nil,
            interface: interface, member: member, arguments: arguments)
    }

    @Test func notificationsAreFollowedByTheirIdAndTheTextsAreNeverAskedFor() {
        let watch = SessionBusWatch()
        var flow = NotificationFlow()
        let notify = message(
            .methodCall, serial: 7, interface: NotificationFlow.interface, member: "Notify",
            [
                0: .string("gnome-maps"), 1: .uint32(0),
                6: .dictionary(
                    key: .string, value: .variant, [.init(.string("desktop-entry"), .variant(.string("org.gnome.Maps")))]),
            ])
        // The summary (3) and body (4) are never among the arguments read.
        #expect(watch.select(notify) == [0, 1, 6])
        #expect(flow.on(notify) == [.notification(app: "org.gnome.Maps", event: .received)])
        let reply = message(
            .methodReturn, serial: 9, reply: 7, sender: ":1.2", destination: ":1.5", interface: nil, member: nil, [0: .uint32(42)]
        )
        #expect(watch.select(reply) == [0])
        #expect(flow.on(reply) == [])
        // A reply to anything else: nothing of it is read.
        #expect(watch.select(message(.methodReturn, reply: 99, destination: ":1.5", interface: nil, member: nil, [:])) == [])
        let invoked = message(
            .signal, interface: NotificationFlow.interface, member: "ActionInvoked", [0: .uint32(42), 1: .string("default")])
        #expect(flow.on(invoked) == [.notification(app: "org.gnome.Maps", event: .defaultAction)])
        let closed = message(
            .signal, interface: NotificationFlow.interface, member: "NotificationClosed", [0: .uint32(42), 1: .uint32(2)])
        #expect(flow.on(closed) == [.notification(app: "org.gnome.Maps", event: .clear)])
        // Closed once: a second signal for the id names no app.
        #expect(flow.on(closed) == [])
        #expect(NotificationFlow.event(closedBy: 1) == .expired && NotificationFlow.event(closedBy: 3) == .removed)
        #expect(NotificationFlow.event(closedBy: 77) == .unknown)
        let saver = message(.signal, interface: NotificationFlow.screenSaver, member: "ActiveChanged", [0: .boolean(true)])
        #expect(flow.on(saver) == [.screenSaver(active: true)])
        #expect(watch.select(message(.signal, interface: "org.example.Other", member: "Secret", [:])) == [])
    }

    @Test func compositorEventsBecomeUsageEventsAndATitleNeverLeaves() throws {
        let sent = Mutex<[WireUsageEvent]>([])
        let queue = DispatchQueue(label: "agent")
        let agent = SessionAgent(catalog: DesktopCatalog(folders: []), queue: queue) { events in
            sent.withLock { $0 += events }
        }
        agent.compositor(.outputPower(output: "HEADLESS-1", on: false))
        agent.compositor(.outputPower(output: "HEADLESS-1", on: true))
        agent.compositor(.foreground(appID: "org.gnome.Maps"))
        agent.compositor(.foreground(appID: "Secret Window Title 55e1"))
        agent.compositor(.gone)
        queue.sync {}
        let events = sent.withLock { $0 }
        #expect(
            events.map(\.kind) == [.watching, .screen, .screen, .foreground, .foreground, .foreground, .watching])
        #expect(events[2].on == true && events[2].source == "compositor")
        #expect(events[3].app == "org.gnome.Maps" && events[3].category == 23)
        #expect(events[4].app == nil)
        let encoded = try String(decoding: JSONEncoder().encode(events), as: UTF8.self)
        #expect(!encoded.contains("Secret"))
    }
}
