import Foundation
import SensorTestKit
import Testing

/// A keyboard emulated by umockdev (Tests/Fixtures/evdev: the node's udev description and the
/// ioctl answers libevdev 1.13 asks for, at the exact buffer sizes umockdev matches) types a
/// script; `keyboard-evdev-child` reads it through `EvdevDevice` and counts it.
@Suite struct EvdevKeyboardTests {
    static let fixtures = EvemuScript.fixtures
    static var child: String {
        let bundle = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (bundle as NSString).deletingLastPathComponent + "/keyboard-evdev-child"
    }

    static let typed = EvemuScript.passphrase

    @Test(.needs(.umockdev), .timeLimit(.minutes(3)))
    func typedKeysAreReadThroughLibevdevAndOnlyCountsLeave() throws {
        #expect(
            try Self.typeIntoChild(Self.typed) == """
                name sensorkit test keyboard typing true
                taps 16 deletes 1 words 2 characters 13 episodes 1 pauses 0 typing 3000 ms overflows 0

                """)
    }

    /// The same typing through `KeyboardSource`: its reading thread, the interval rows it
    /// delivers (1 s intervals here), and the interval in progress delivered when it stops.
    @Test(.needs(.umockdev), .timeLimit(.minutes(3)))
    func theSourceDeliversEveryPressInItsIntervals() throws {
        #expect(
            try Self.typeIntoChild(Self.typed, source: true) == """
                status recording
                taps 16 deletes 1 words 2 characters 13 several intervals true
                gaps 0

                """)
    }

    /// The kernel's buffer overflowing (`SYN_DROPPED`, replayed by umockdev; libevdev resyncs
    /// through the ioctls the fixture answers) is counted, breaks the episode, and the source
    /// reports the stretch it cannot vouch for as a gap: the deletion record of docs/keyboard.md §4.
    @Test(.needs(.umockdev), .timeLimit(.minutes(3)))
    func anOverflowIsCountedAndItsStretchIsAGap() throws {
        #expect(
            try Self.typeIntoChild(Self.typed, droppedBefore: 8) == """
                name sensorkit test keyboard typing true
                taps 16 deletes 1 words 2 characters 13 episodes 2 pauses 0 typing 2800 ms overflows 1

                """)
        #expect(
            try Self.typeIntoChild(Self.typed, source: true, droppedBefore: 8) == """
                status recording
                taps 16 deletes 1 words 2 characters 13 several intervals true
                gaps 1: systemInitiated the kernel's input buffer overflowed: key events were dropped

                """)
    }

    /// udev enumeration through `KeyboardDiscovery`: the emulated keyboard becomes one source,
    /// named by its port (`ID_PATH`), and stopping removes it.
    @Test(.needs(.umockdev), .timeLimit(.minutes(3)))
    func discoveryFindsTheKeyboardByItsUdevProperties() throws {
        #expect(
            try Self.typeIntoChild([], arguments: ["--discover"]) == """
                evdev:platform-i8042-serio-0 /dev/input/event3 sensorkit test keyboard
                removed evdev:platform-i8042-serio-0

                """)
    }

    /// Runs the child under umockdev with the emulated keyboard typing `codes`; returns what it printed.
    static func typeIntoChild(
        _ codes: [UInt16], source: Bool = false, droppedBefore: Int? = nil, arguments: [String]? = nil
    ) throws -> String {
        let events = NSTemporaryDirectory() + "/keyboard-\(getpid())-\(source)-\(droppedBefore ?? -1).events"
        try EvemuScript.typing(codes, droppedBefore: droppedBefore).write(toFile: events, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: events) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments =
            [
                "--kill-after=5", "30", "/usr/bin/umockdev-run", "-d", Self.fixtures + "/keyboard.umockdev",
                "-i", "/dev/input/event3=" + Self.fixtures + "/keyboard.ioctl", "-e", "/dev/input/event3=" + events,
                "--", Self.child,
            ] + (arguments ?? (source ? ["--source"] : []) + ["/dev/input/event3", String(codes.count)])
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let log = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "child failed:\n\(log)")
        return log
    }
}
