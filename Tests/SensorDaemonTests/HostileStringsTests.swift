import BLETestKit
import Foundation
import Glibc
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorSystem
import Testing

/// Nothing from outside reaches the journal or the administrator's terminal unescaped: a client's
/// app name and a wearable's Device Information strings can neither forge a journal line nor drive
/// a terminal, a 60 KB name is cut, and a flood of refused hellos logs a bounded number of lines
/// (docs/reliability.md, "Hostile strings").
@Suite(.serialized) struct HostileStringsTests {
    /// A newline and a `<0>` priority (a forged emergency line), ESC sequences that set the window
    /// title, write the clipboard (OSC 52) and clear the screen, BEL, NUL, CR, DEL and a C1 CSI.
    static let hostile =
        "evil\n<0>sensorkitd: disk on fire\r\u{1B}]0;pwned\u{07}\u{1B}]52;c;cm0gLXJmIH4=\u{07}\u{1B}[2J\u{0}\u{7F}\u{9B}0m"

    /// No C0 control but the newline ending each line, no DEL, no C1 control.
    static func isClean(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { $0 == "\n" || !($0.value < 0x20 || (0x7F...0x9F).contains($0.value)) }
    }

    static func forgedLines(_ lines: [String]) -> [String] {
        lines.filter { $0.hasPrefix("<0>") || $0.hasPrefix("sensorkitd: disk") || $0.contains("\u{1B}") }
    }

    @Test(.timeLimit(.minutes(3))) func hostileAppNamesAreEscapedCutAndRateLimited() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        #expect(throws: (any Error).self) { try harness.connect(app: Self.hostile) }
        let hostileLines = harness.logLines().filter { $0.contains("refused connection") }
        #expect(hostileLines.count == 1, "\(harness.logLines())")
        #expect(hostileLines.allSatisfy(Self.isClean), "\(hostileLines)")
        #expect(
            hostileLines.first?.contains("evil\\n<0>sensorkitd: disk on fire\\r\\x1B]0;pwned\\x07") == true, "\(hostileLines)")
        #expect(Self.forgedLines(harness.logLines()).isEmpty)

        // A flood from one user: 50 connections at once, each a hello with a 60 KB name, each
        // refused; the log grows by a line or two, not by 50 × 60 KB.
        let before = harness.logLines()
        let huge = String(repeating: "A", count: 60_000)
        let clients = try (0..<50).map { i in
            let fd = try UnixSocket.connect(path: harness.socket)
            try UnixSocket.writeAll(
                fd,
                Frame(kind: .message, payload: Array("{\"id\":1,\"op\":\"hello\",\"v\":1,\"app\":\"\(huge)\(i)\"}".utf8))
                    .encoded())
            return fd
        }
        for fd in clients {
            // Each is answered and closed: read to the end.
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while UnixSocket.poll(fd: fd, events: Int16(POLLIN), timeoutMilliseconds: 5000) > 0,
                buffer.withUnsafeMutableBytes({ Glibc.read(fd, $0.baseAddress, $0.count) }) > 0
            {}
            close(fd)
        }
        let added = Array(harness.logLines().dropFirst(before.count))
        #expect(added.count <= 2, "\(added.count) lines for 40 refused hellos")
        let bytes = added.reduce(0) { $0 + $1.utf8.count }
        #expect(bytes < 2 * Journal.lineLimit, "\(bytes) bytes logged for 40 hellos of 60 KB names")
        #expect(!added.contains { $0.contains(huge) }, "a 60 KB name is cut")
        // The daemon still serves: the study app connects.
        #expect((try? harness.connect(app: DaemonHarness.studyApp)) != nil)
    }

    @Test(.timeLimit(.minutes(3))) func aWearablesHostileDeviceInformationReachesNeitherLogNorTerminalRaw() throws {
        let address = "C0:FF:EE:00:00:66"
        let rig = try WearableRig(
            sensors: "heartRate", entitlements: ["heart-rate"],
            wearables: """
                [wearable strap]
                address = \(address)
                streams = heartRate
                """)
        defer { rig.stop() }
        var profile = EmulatedPeripheral.Profile.strap(address: address)
        profile.name = "Strap" + Self.hostile
        profile.manufacturer = "Maker" + Self.hostile
        profile.model = "Model" + Self.hostile
        profile.firmware = "1.0" + Self.hostile
        let strap = try EmulatedPeripheral(directory: rig.directory, profile: profile)
        _ = strap
        let app = try rig.start()
        let run = rig.run
        try run.startRecording(app, .heartRate)
        #expect(IIODaemonRun.eventually(15) { run.log.contains("firmware 1.0evil") }, "\(run.log)")
        let lines = run.log.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(Self.forgedLines(lines).isEmpty, "\(Self.forgedLines(lines))")
        #expect(Self.isClean(run.log), "control bytes in the journal:\n\(run.log)")
        #expect(run.log.contains("Model" + PrintableText.escaped(Self.hostile)), "\(run.log)")

        // The administrator's terminal: devices and status show what the device said, escaped.
        #expect(IIODaemonRun.eventually(15) { (try? run.devices().count) == 1 }, "\(run.log)")
        let ctl = DaemonHarness.productsFolder + "/sensorkitctl"
        for command in [["devices"], ["status"], ["sensors"]] {
            let (status, output) = try Self.run(ctl, ["--socket", run.socket] + command)
            #expect(status == 0, "\(command): \(output)")
            #expect(
                Self.isClean(output),
                "\(command) printed control bytes: \(output.unicodeScalars.filter { $0.value < 0x20 && $0 != "\n" }.map(\.value))"
            )
            if command == ["devices"] {
                #expect(output.contains("deviceModel: Model" + PrintableText.escaped(Self.hostile)), "\(output)")
            }
        }
    }

    /// Runs `tool` with `arguments`; exit status and stdout + stderr.
    static func run(_ tool: String, _ arguments: [String]) throws -> (Int32, String) {
        try CommandOutput.run(["/usr/bin/timeout", "30", tool] + arguments)
    }
}
