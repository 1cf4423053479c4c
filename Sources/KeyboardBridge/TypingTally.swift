/// The typing metrics of one interval, counted from key classes and times only (docs/keyboard.md,
/// "What is counted"). A pure value: the reading thread feeds it and takes its counts when an
/// interval closes; what is typed is never known to it.
public struct TypingTally: Hashable, Sendable {
    /// When a gap between two presses is a pause, and when it ends a typing episode.
    public struct Thresholds: Hashable, Sendable {
        /// A gap at least this long inside an episode is a pause (ns).
        public var pause: Int64
        /// A gap at least this long ends the episode; the next press starts a new one (ns).
        public var episodeEnd: Int64

        public init(pause: Int64 = 2_000_000_000, episodeEnd: Int64 = 10_000_000_000) {
            self.pause = max(1, pause)
            self.episodeEnd = max(self.pause, episodeEnd)
        }
    }

    /// What one interval counted.
    public struct Counts: Hashable, Sendable {
        /// Presses of any key but a modifier (autorepeat is not a tap).
        public var taps = 0
        /// Presses and autorepeats of backspace and delete (each removes a character).
        public var deletes = 0
        /// Separators typed after at least one character of a word.
        public var words = 0
        /// Letters and digits pressed: the numerator of the typing speed.
        public var characters = 0
        public var episodes = 0
        public var pauses = 0
        /// Time inside episodes, from each episode's first press to its last, pauses included.
        public var typingNanoseconds: Int64 = 0
        /// Times the kernel dropped events (`SYN_DROPPED`): counts in this interval are low by
        /// what was lost.
        public var overflows = 0

        public init() {}

        /// Characters per second of typing; 0 when there was no typing time.
        public var typingSpeed: Double {
            typingNanoseconds > 0 ? Double(characters) / (Double(typingNanoseconds) / 1e9) : 0
        }
    }

    public let thresholds: Thresholds
    public private(set) var counts = Counts()
    private var lastPress: Int64?
    /// Characters of the word in progress (backspace takes one back); a count, never the characters.
    private var wordLength = 0

    public init(thresholds: Thresholds = Thresholds()) { self.thresholds = thresholds }

    /// One key event at `time` (boot ns, never decreasing across calls; an earlier time counts
    /// as no gap).
    public mutating func record(_ key: KeyClass, _ action: KeyAction, at time: Int64) {
        switch (action, key) {
        case (.release, _), (_, .modifier): return
        case (.autorepeat, .delete):
            counts.deletes &+= 1
            wordLength = max(0, wordLength - 1)
            return
        case (.autorepeat, _): return
        case (.press, _): break
        }
        press(at: time)
        counts.taps &+= 1
        switch key {
        case .character:
            counts.characters &+= 1
            wordLength &+= 1
        case .separator:
            if wordLength > 0 { counts.words &+= 1 }
            wordLength = 0
        case .delete:
            counts.deletes &+= 1
            wordLength = max(0, wordLength - 1)
        case .modifier, .other: break
        }
    }

    private mutating func press(at time: Int64) {
        defer { lastPress = max(time, lastPress ?? time) }
        guard let last = lastPress else {
            counts.episodes &+= 1
            return
        }
        let gap = max(0, time.subtractingReportingOverflow(last).overflow ? Int64.max : time - last)
        if gap >= thresholds.episodeEnd {
            counts.episodes &+= 1
            return
        }
        counts.typingNanoseconds =
            counts.typingNanoseconds.addingReportingOverflow(gap).overflow ? .max : counts.typingNanoseconds + gap
        if gap >= thresholds.pause { counts.pauses &+= 1 }
    }

    /// The kernel dropped events: the word in progress and the episode's continuity are unknown,
    /// so neither is guessed at (the next press starts a new episode).
    public mutating func eventsLost() {
        counts.overflows &+= 1
        wordLength = 0
        lastPress = nil
    }

    /// Closes the interval: returns its counts and starts the next from zero. An episode or a
    /// word in progress goes on into the next interval.
    public mutating func takeCounts() -> Counts {
        defer { counts = Counts() }
        return counts
    }
}
