import KeyboardBridge
import Testing
import Udev

@Suite struct KeyboardDiscoveryTests {
    static func device(_ properties: [String: String], devnode: String? = "/dev/input/event4") -> UdevDevice {
        UdevDevice(syspath: "/sys/devices/x/input/input4/event4", sysname: "event4", devnode: devnode, properties: properties)
    }

    @Test func onlyTypingKeyboardsWithAnEventNodeAreKeyboards() {
        let keyboard = KeyboardDiscovery.keyboard(
            Self.device(["ID_INPUT_KEYBOARD": "1", "ID_INPUT_KEY": "1", "ID_PATH": "pci-0000:00:14.0-usb-0:2:1.0"]),
            name: "USB keyboard")
        #expect(
            keyboard
                == KeyboardDevice(devnode: "/dev/input/event4", identity: "pci-0000:00:14.0-usb-0:2:1.0", name: "USB keyboard"))
        // A power button has keys but is no keyboard; a mouse neither.
        #expect(KeyboardDiscovery.keyboard(Self.device(["ID_INPUT_KEY": "1"]), name: "Power Button") == nil)
        #expect(KeyboardDiscovery.keyboard(Self.device(["ID_INPUT_MOUSE": "1"]), name: "Mouse") == nil)
        // No node, or a node that is not an event node (the legacy /dev/input/mouse0 style).
        #expect(KeyboardDiscovery.keyboard(Self.device(["ID_INPUT_KEYBOARD": "1"], devnode: nil), name: nil) == nil)
        #expect(
            KeyboardDiscovery.keyboard(Self.device(["ID_INPUT_KEYBOARD": "1"], devnode: "/dev/input/js0"), name: nil) == nil)
        // Without a port path the sysfs path names it; an absent, empty or overlong name is bounded.
        let bare = KeyboardDiscovery.keyboard(Self.device(["ID_INPUT_KEYBOARD": "1", "ID_PATH": ""]), name: "")
        #expect(bare?.identity == "/sys/devices/x/input/input4/event4")
        #expect(bare?.name == "event4")
        let long = KeyboardDiscovery.keyboard(
            Self.device(["ID_INPUT_KEYBOARD": "1"]), name: String(repeating: "k", count: 10_000))
        #expect(long?.name.count == 128)
    }
}
