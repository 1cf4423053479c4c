import Foundation
import SensorKit
import SensorKitModel
import SensorSimulation
import SensorTestKit
import Testing

/// The real `sensorkitd` under umockdev with an emulated keyboard typing a passphrase
/// (docs/keyboard.md): the study app records `keyboardMetrics` and fetches the counts, and no
/// byte the daemon wrote — store, catalog, log, the fetch's frames — holds the keys.
@Suite struct KeyboardEndToEndTests {
    @Test(.needs(.umockdev), .timeLimit(.minutes(3)))
    func typingIsRecordedAsCountsAndTheKeysAreNowhere() throws {
        let run = try IIODaemonRun(
            extraConfig: "[keyboard]\ninterval = 1s\n", entitlements: ["keyboard-metrics"], grants: "keyboardMetrics")
        defer { run.stop() }
        let events = run.folder + "-typing.events"
        try EvemuScript.typing(EvemuScript.passphrase).write(toFile: events, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: events) }
        try run.startUnderUmockdevRun(
            device: EvemuScript.fixtures + "/keyboard.umockdev", options: EvemuScript.umockdevOptions(events: events))
        let app = try run.connect()
        defer { app.close() }
        try run.startRecording(app, .keyboardMetrics)

        // taps, deletes, words: the wire columns' sums over every interval fetched.
        var fetched = Fetched()
        var frames: [UInt8] = []
        let recorded = try IIODaemonRun.eventually(20) {
            let (now, _) = try run.timeline(app)
            let (batches, _) = DaemonHarness.fetchAll(app, sensor: .keyboardMetrics, from: 0, to: now, timeout: 10)
            fetched = Fetched()
            frames = []
            for batch in batches {
                fetched.append(batch)
                batch.appendFrame(to: &frames)
            }
            return fetched.count > 0 && fetched.columns[1].reduce(0, +) >= Double(EvemuScript.passphrase.count)
        }
        #expect(recorded, "the typing was not recorded:\n\(run.log)")
        let sum = { (column: KeyboardMetricsFamily.Wire) in fetched.columns[column.ordinal].reduce(0, +) }
        #expect(sum(.taps) == 16)
        #expect(sum(.deletes) == 1)
        #expect(sum(.words) == 2)
        #expect(sum(.episodes) >= 1)
        #expect(fetched.columns[KeyboardMetricsFamily.Wire.duration.ordinal].allSatisfy { $0 > 0 && $0 <= 1.5 })
        run.stop()  // the store flushed and closed, the log complete

        // Every byte the daemon wrote: its state directory (catalog, chunks, journal), its log,
        // and the frames it sent.
        var written: [(String, [UInt8])] = [("fetched frames", frames)]
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
        #expect(written.count >= 3, "the store wrote no files under \(state)")
        for (name, bytes) in written {
            for (form, needle) in Self.passphraseForms where Self.contains(bytes, needle) {
                Issue.record("\(name) holds the typed keys (\(form))")
            }
        }
        // A log that names each key on a line of its own: the codes in order among its numbers.
        #expect(!Self.numbersHold(Self.codes, in: run.log), "the daemon's log names the typed keys")
    }

    /// The key codes of "correct".
    static var codes: [Int] { EvemuScript.passphrase.prefix(7).map(Int.init) }

    /// Whether `text`'s whole numbers (journal priorities `<N>` left out) hold `codes` in order,
    /// at most three other numbers between two of them.
    /// A keyboard plugged in while `keyboardMetrics` is recorded is found through udev and its
    /// typing counted; unplugged, its source goes (docs/keyboard.md: keyboards come and go).
    @Test(.needs(.umockdev), .timeLimit(.minutes(3)))
    func aKeyboardPluggedInWhileRecordingIsFoundCountedAndLetGo() throws {
        let run = try IIODaemonRun(
            extraConfig: "[keyboard]\ninterval = 1s\n", entitlements: ["keyboard-metrics"], grants: "keyboardMetrics")
        defer { run.stop() }
        try run.startUnderTestbed()
        let app = try run.connect()
        defer { app.close() }
        try run.startRecording(app, .keyboardMetrics)
        let keyboard = { (try? run.devices())?.first { $0.source.hasPrefix("evdev:") } }
        usleep(500_000)
        #expect(keyboard() == nil, "a keyboard before one was plugged in\n\(run.log)")

        let events = run.folder + "-hotplug.events"
        try EvemuScript.typing(EvemuScript.passphrase).write(toFile: events, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: events) }
        // Its ioctls answered before udev announces it: the daemon opens it at the announcement.
        try run.command("ioctl", EvemuScript.node, EvemuScript.fixtures + "/keyboard.ioctl")
        try run.command("add", EvemuScript.fixtures + "/keyboard.umockdev")
        try run.command("evemu", EvemuScript.node, events)
        #expect(
            IIODaemonRun.eventually(15) { keyboard()?.state == "recording" }, "the plugged keyboard was not found\n\(run.log)")
        var taps = 0.0
        let counted = try IIODaemonRun.eventually(20) {
            let (now, _) = try run.timeline(app)
            let (batches, _) = DaemonHarness.fetchAll(app, sensor: .keyboardMetrics, from: 0, to: now, timeout: 10)
            taps = batches.flatMap { $0.columns[1] }.reduce(0, +)
            return taps >= Double(EvemuScript.passphrase.count)
        }
        #expect(counted, "\(taps) taps of \(EvemuScript.passphrase.count)\n\(run.log)")

        try run.command("remove", "/sys/devices/platform/i8042/serio0/input/input3/event3")
        #expect(IIODaemonRun.eventually(15) { keyboard() == nil }, "the unplugged keyboard stayed\n\(run.log)")
        #expect(run.log.contains("removed"), "\(run.log)")
    }

    static func numbersHold(_ codes: [Int], in text: String) -> Bool {
        var numbers: [Int] = []
        var digits = ""
        var inPriority = false
        for character in text {
            if character == "<" { inPriority = true }
            if character == ">" { inPriority = false }
            if character.isASCII, character.isNumber, !inPriority {
                digits.append(character)
            } else if !digits.isEmpty {
                numbers.append(Int(digits.prefix(18)) ?? -1)
                digits = ""
            }
        }
        if !digits.isEmpty { numbers.append(Int(digits.prefix(18)) ?? -1) }
        for start in numbers.indices where numbers[start] == codes[0] {
            var position = start, found = 1
            while found < codes.count {
                let window = numbers[(position + 1)..<min(numbers.count, position + 5)]
                guard let next = window.firstIndex(of: codes[found]) else { break }
                position = next
                found += 1
            }
            if found == codes.count { return true }
        }
        return false
    }

    /// The passphrase as every form a leak could take: its text, and its key codes as bytes,
    /// 16-, 32- and 64-bit integers (either byte order), decimal and hex text.
    static var passphraseForms: [(String, [UInt8])] {
        let codes = EvemuScript.passphrase.filter { $0 != 14 && $0 != 28 }.prefix(7)  // "correct"
        var forms: [(String, [UInt8])] = [
            ("text", Array("correct horse".utf8)), ("text", Array("CORRECT HORSE".utf8)), ("text", Array("correct".utf8)),
            ("u8", codes.map { UInt8($0) }),
            ("decimal", Array(codes.map(String.init).joined(separator: ",").utf8)),
            ("decimal", Array(codes.map(String.init).joined(separator: " ").utf8)),
            ("hex", Array(codes.map { String(format: "%02x", $0) }.joined().utf8)),
        ]
        for width in [2, 4, 8] {
            forms.append(("\(width * 8)-bit little-endian", codes.flatMap { Self.bytes(UInt64($0), width, bigEndian: false) }))
            forms.append(("\(width * 8)-bit big-endian", codes.flatMap { Self.bytes(UInt64($0), width, bigEndian: true) }))
        }
        return forms
    }

    static func bytes(_ value: UInt64, _ width: Int, bigEndian: Bool) -> [UInt8] {
        let little = (0..<width).map { UInt8(truncatingIfNeeded: value >> UInt64(8 * $0)) }
        return bigEndian ? little.reversed() : little
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start] == needle[0] && haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }
}
