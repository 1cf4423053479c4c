import Foundation

/// Keyboard metrics from evdev (docs/keyboard.md): one row per interval of one keyboard, timed
/// at the interval's end, holding counts only — never a key.
public enum KeyboardMetricsFamily: SensorFamily {
    public enum Stored: String, FamilyColumn {
        /// The interval's length, ns.
        case duration
        case taps, deletes, words, characters, episodes, pauses
        /// Time inside typing episodes, ns.
        case typingDuration
        /// Kernel buffer overflows in the interval (its counts are low by what was lost).
        case overflows
    }

    public enum Wire: String, FamilyColumn {
        /// Seconds.
        case duration
        case taps, deletes, words, episodes, pauses
        /// Seconds.
        case typingDuration
        /// Characters per second of typing.
        case typingSpeed
    }

    public static let layout = BatchLayout.keyboardMetrics
    public static let sensors: [SRSensor] = [.keyboardMetrics]
    public static let isLinear = false
    /// What `keyboardIdentifier` says: the daemon knows the keys' classes, not a layout.
    public static let keyboardIdentifier = "linux-evdev"
    /// Session identifiers made per interval at most (one per typing episode).
    public static let maximumSessionsPerInterval = 1_000

    /// How each stored column reads.
    public static func kind(_ column: Stored) -> ColumnKind {
        switch column {
        case .duration, .typingDuration: .count(scale: 1e-9, offset: 0, unit: "s")
        case .taps, .deletes, .words, .characters, .episodes, .pauses, .overflows: .count("count")
        }
    }

    public static func mapping(_ stream: StoredStream<Stored>) throws(MissingStoredColumn) -> StoredMapping<Stored, Wire> {
        for column in Stored.allCases { _ = try stream.require(column) }
        return .perSample { stored, wire in
            let copies: [(Stored, Wire)] = [
                (.duration, .duration), (.taps, .taps), (.deletes, .deletes), (.words, .words), (.episodes, .episodes),
                (.pauses, .pauses), (.typingDuration, .typingDuration),
            ]
            for (from, to) in copies { stored.physical(from)!.write(to: wire[to]) }
            let characters = stored.physical(.characters)!, typing = stored.physical(.typingDuration)!
            let speed = wire[.typingSpeed]
            for i in 0..<stored.count { speed[i] = typing[i] > 0 ? characters[i] / typing[i] : 0 }
        }
    }

    public static func results<Results: FetchResultBuilder>(_ batch: FamilyBatch<Wire>, into results: inout Results) {
        let (t, duration, episodes) = (batch.times, batch[.duration], batch[.episodes])
        let (taps, deletes, words, pauses) = (batch[.taps], batch[.deletes], batch[.words], batch[.pauses])
        let (typing, speed) = (batch[.typingDuration], batch[.typingSpeed])
        results.each { i in
            // One session per typing episode, named by the interval's start (SR ns) and its number.
            let start = t[i].subtractingSaturating(Int64(exactly: (duration[i] * 1e9).rounded()) ?? 0)
            let sessions = count(episodes[i], atMost: maximumSessionsPerInterval)
            return SRKeyboardMetrics(
                duration: duration[i], keyboardIdentifier: keyboardIdentifier, version: "1",
                width: Measurement(value: 0, unit: .millimeters), height: Measurement(value: 0, unit: .millimeters),
                sessionIdentifiers: (0..<sessions).map { "\(start).\($0)" },
                counters: [
                    .totalTaps: count(taps[i]), .totalDeletes: count(deletes[i]), .totalWords: count(words[i]),
                    .totalPauses: count(pauses[i]), .totalTypingEpisodes: count(episodes[i]),
                ],
                totalTypingDuration: typing[i], typingSpeed: speed[i])
        }
    }

    /// A stored count as an `Int`: whatever a damaged store holds, never a trap.
    static func count(_ value: Double, atMost limit: Int = Int(Int32.max)) -> Int {
        guard value.isFinite, value > 0 else { return 0 }
        return value >= Double(limit) ? limit : Int(value)
    }
}
