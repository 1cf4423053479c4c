import SensorSystem
import Testing

/// Nothing from outside reaches the log, or a terminal, unescaped: a value can neither start a
/// line of its own (with a forged `<0>` priority) nor carry a terminal escape sequence, and a
/// huge value is cut (docs/reliability.md, "Hostile strings").
@Suite struct JournalEscapingTests {
    static let hostile =
        "x\n<0>sensorkitd: forged emergency\r\u{1B}]0;owned\u{07}\u{1B}]52;c;cm0gLXJm\u{07}\u{1B}[2J\u{0}\u{7F}\u{9B}31m\u{202E}"

    /// No control character of any kind (C0, DEL, C1) and no line or bidi separator.
    static func isClean(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { scalar in
            !(scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || [0x2028, 0x2029, 0x202E].contains(scalar.value))
        }
    }

    @Test func aHostileValueStaysOneEscapedLine() {
        let (journal, lines) = Journal.memory()
        let app = Self.hostile
        journal.notice("refused connection from uid 1000: no app '\(app)' is installed")
        #expect(lines().count == 1)
        let line = lines()[0]
        #expect(line.hasPrefix("<5>refused connection"))
        #expect(Self.isClean(line), "\(line.unicodeScalars.map { String($0.value, radix: 16) })")
        #expect(line.contains("x\\n<0>sensorkitd: forged emergency\\r\\x1B]0;owned\\x07"), "\(line)")
        #expect(line.contains("\\x00\\x7F\\u{9B}31m\\u{202E}"), "\(line)")
    }

    @Test func aRawLineIsEscapedToo() {
        // The line-level pass catches text that reached the journal as a whole String.
        let (journal, lines) = Journal.memory()
        journal("<4>wearable said " + Self.hostile)
        #expect(lines().count == 1 && Self.isClean(lines()[0]) && lines()[0].hasPrefix("<4>wearable said x\\n<0>"), "\(lines())")
    }

    @Test func a60KBValueIsCutAndTheLineIsBounded() {
        let (journal, lines) = Journal.memory()
        let name = String(repeating: "A", count: 60 << 10)
        journal.notice("refused connection from uid 1000: no app '\(name)' is installed; closing")
        let line = lines()[0]
        #expect(line.unicodeScalars.count < PrintableText.valueLimit + 100, "\(line.utf8.count) bytes")
        #expect(line.contains("…(61440 bytes in all)' is installed; closing"), "the rest of the line stays: \(line.suffix(80))")
        // One character with 60 KB of combining marks is cut by scalars, not characters.
        let zalgo = "a" + String(repeating: "\u{301}", count: 30_000)
        journal.notice("name \(zalgo)")
        #expect(lines()[1].unicodeScalars.count < PrintableText.valueLimit + 100)
        // And a line whose literal text alone is over the bound is cut at it.
        journal(String(repeating: "<6>", count: 3000))
        #expect(lines()[2].unicodeScalars.count <= Journal.lineLimit + 40)
    }

    @Test func printableTextLeavesOrdinaryTextAlone() {
        let text = "Polar H10 8C4E2A27 — Ünïcödé 心拍 ✓ 100 %"
        #expect(PrintableText.escaped(text) == text)
        #expect(PrintableText.isPrintable(text))
        #expect(PrintableText.escaped("a\tb") == "a\\tb")
        #expect(!PrintableText.isPrintable("a\u{85}b"))
    }

    @Test func recurringProblemsKeepABoundedTableOfCauses() {
        // Causes named after outside values (one per uid, per app) share one entry past the bound.
        let (journal, lines) = Journal.memory()
        let problems = RecurringProblems(journal)
        for uid in 0..<(RecurringProblems.maximumCauses * 4) {
            problems.report("refused hellos of uid \(uid)", "<5>refused uid \(uid)")
        }
        #expect(lines().count == RecurringProblems.maximumCauses, "one first line per kept cause, then silence")
        problems.flush()
        #expect(
            lines().last?.hasPrefix("<4>other recurring problems: \(RecurringProblems.maximumCauses * 3) more times") == true,
            "\(lines().suffix(2))")
    }
}
