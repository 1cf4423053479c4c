import Foundation

/// A keyboard typing, as the evemu events umockdev replays into an emulated evdev node
/// (`umockdev-run -e NODE=FILE`; docs/keyboard.md §6).
public enum EvemuScript {
    /// The emulated keyboard's fixtures (`keyboard.umockdev`, `keyboard.ioctl`), its node.
    public static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/evdev").path
    public static let node = "/dev/input/event3"

    /// "correct horse⌫e⏎" as key codes.
    public static let passphrase: [UInt16] = [46, 24, 19, 19, 18, 46, 20, 57, 35, 24, 19, 31, 18, 14, 18, 28]

    /// Presses and releases `codes` `gap` ms apart (a scan code first, as real keyboards send).
    /// umockdev reads the fraction after the dot as a number of its own, a leading zero meaning
    /// octal, so times are written as `seconds.microseconds` without zero padding.
    /// With `droppedBefore` n, the kernel reports its buffer overflowed (`SYN_DROPPED`) a quarter
    /// gap before the n-th press (nothing typed is lost with it, so the counts stay comparable).
    public static func typing(_ codes: [UInt16], gap: Int64 = 200, droppedBefore: Int? = nil) -> String {
        var lines = ["# device \(node)"]
        var micros: Int64 = 1_000_000
        func event(_ type: Int, _ code: UInt16, _ value: Int) {
            lines.append(String(format: "E: %lld.%lld %04x %04x %d", micros / 1_000_000, micros % 1_000_000, type, code, value))
        }
        for (index, code) in codes.enumerated() {
            if index == droppedBefore {
                event(0, 3, 0)
                event(0, 0, 0)
                micros += gap * 1000 / 4
            }
            event(4, 4, Int(code) + 0x70000)
            event(1, code, 1)
            event(0, 0, 0)
            micros += gap * 1000 / 4
            event(1, code, 0)
            event(0, 0, 0)
            micros += gap * 1000 * 3 / 4
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `umockdev-run` options emulating the keyboard typing `events` (a file).
    public static func umockdevOptions(events: String) -> [String] {
        ["-i", "\(node)=\(fixtures)/keyboard.ioctl", "-e", "\(node)=\(events)"]
    }
}
