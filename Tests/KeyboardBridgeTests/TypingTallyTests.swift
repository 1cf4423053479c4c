import KeyboardBridge
import Testing

@Suite struct TypingTallyTests {
    static let ms: Int64 = 1_000_000
    static let letters: [UInt16] = [46, 24, 19, 19, 18, 46, 20]  // c o r r e c t (a word of seven keys)

    /// Presses and releases `codes` 150 ms apart from `start`; returns the time after the last.
    @discardableResult
    static func type(_ codes: [UInt16], into tally: inout TypingTally, from start: Int64, gap: Int64 = 150 * ms) -> Int64 {
        var time = start
        for code in codes {
            tally.record(KeyClass(evdevCode: code), .press, at: time)
            tally.record(KeyClass(evdevCode: code), .release, at: time + 40 * ms)
            time += gap
        }
        return time - gap
    }

    @Test func wordsAreSeparatorsAfterCharactersAndTypingTimeIsTheEpisodeSpan() {
        var tally = TypingTally()
        // "correct horse⏎": 12 characters, a space, an enter.
        Self.type(Self.letters + [57] + [35, 24, 19, 31, 18] + [28], into: &tally, from: 1_000 * Self.ms)
        let counts = tally.counts
        #expect(counts.taps == 14)
        #expect(counts.characters == 12)
        #expect(counts.words == 2)
        #expect(counts.deletes == 0)
        #expect(counts.episodes == 1)
        #expect(counts.pauses == 0)
        #expect(counts.typingNanoseconds == 13 * 150 * Self.ms)
        #expect(abs(counts.typingSpeed - 12 / 1.95) < 1e-9)
    }

    @Test func separatorsWithoutCharactersAndDeletedWordsAreNoWords() {
        var tally = TypingTally()
        // "  ab⌫⌫ ,": the separators before, the two characters deleted, then separators again.
        Self.type([57, 57, 30, 48, 14, 14, 57, 51], into: &tally, from: 0)
        #expect(tally.counts.words == 0)
        #expect(tally.counts.deletes == 2)
        #expect(tally.counts.taps == 8)
    }

    @Test func autorepeatDeletesButIsNoTapAndModifiersAreNoTaps() {
        var tally = TypingTally()
        tally.record(.modifier, .press, at: 0)  // shift
        tally.record(.character, .press, at: 10 * Self.ms)
        tally.record(.character, .autorepeat, at: 20 * Self.ms)
        tally.record(.delete, .press, at: 30 * Self.ms)
        tally.record(.delete, .autorepeat, at: 40 * Self.ms)
        tally.record(.delete, .autorepeat, at: 50 * Self.ms)
        tally.record(.modifier, .release, at: 60 * Self.ms)
        #expect(tally.counts.taps == 2)
        #expect(tally.counts.deletes == 3)
        #expect(tally.counts.characters == 1)
    }

    @Test func pausesAndEpisodesFollowTheThresholds() {
        var tally = TypingTally(thresholds: .init(pause: 2_000 * Self.ms, episodeEnd: 10_000 * Self.ms))
        tally.record(.character, .press, at: 0)
        tally.record(.character, .press, at: 1_999 * Self.ms)  // no pause
        tally.record(.character, .press, at: 4_000 * Self.ms)  // a pause (2.001 s)
        tally.record(.character, .press, at: 14_000 * Self.ms)  // 10 s: a new episode
        tally.record(.character, .press, at: 14_100 * Self.ms)
        #expect(tally.counts.pauses == 1)
        #expect(tally.counts.episodes == 2)
        #expect(tally.counts.typingNanoseconds == 4_000 * Self.ms + 100 * Self.ms)
    }

    @Test func droppedEventsAreCountedAndBreakTheEpisodeAndTheWord() {
        var tally = TypingTally()
        tally.record(.character, .press, at: 0)
        tally.eventsLost()
        tally.record(.separator, .press, at: 100 * Self.ms)  // the word before the loss is unknown
        #expect(tally.counts.overflows == 1)
        #expect(tally.counts.words == 0)
        #expect(tally.counts.episodes == 2)
        #expect(tally.counts.typingNanoseconds == 0)
    }

    @Test func hostileTimesNeitherTrapNorCountNegativeTime() {
        var tally = TypingTally()
        tally.record(.character, .press, at: .max)
        tally.record(.character, .press, at: .min)  // backwards: no gap
        tally.record(.character, .press, at: 0)
        tally.record(.character, .press, at: .max)
        #expect(tally.counts.typingNanoseconds == 0)
        #expect(tally.counts.taps == 4)
        var other = TypingTally()
        other.record(.character, .press, at: .min)
        other.record(.character, .press, at: .min + 1_000)
        #expect(other.counts.typingNanoseconds == 1_000)
    }

    @Test func everyKeyCodeHasAClassAndOnlyTypingKeysAreCharacters() {
        let classes = (0...UInt16.max).map(KeyClass.init(evdevCode:))
        #expect(classes.filter { $0 == .character }.count == 36 + 10)  // letters, digits, keypad digits
        #expect(KeyClass(evdevCode: 57) == .separator)
        #expect(KeyClass(evdevCode: 14) == .delete)
        #expect(KeyClass(evdevCode: 42) == .modifier)
        #expect(KeyClass(evdevCode: 0x2ff) == .other)
        #expect(KeyAction(evdevValue: 3) == nil)
    }
}

@Suite struct KeyboardMeterTests {
    static let s: Int64 = 1_000_000_000

    @Test func intervalsCloseAtTheirBoundariesAndKeysCountWhereTheyFall() {
        var meter = KeyboardMeter(start: 100 * Self.s, intervalLength: 60 * Self.s)
        #expect(meter.record(.character, .press, at: 110 * Self.s).isEmpty)
        #expect(meter.record(.separator, .press, at: 111 * Self.s).isEmpty)
        // 150 s later: the first interval (100–160) and an empty one (160–220) close first.
        let closed = meter.record(.character, .press, at: 230 * Self.s)
        #expect(closed.map(\.start) == [100 * Self.s, 160 * Self.s])
        #expect(closed.map(\.end) == [160 * Self.s, 220 * Self.s])
        #expect(closed[0].counts.taps == 2 && closed[0].counts.words == 1)
        #expect(closed[1].counts == TypingTally.Counts())
        let last = meter.finish(at: 235 * Self.s)
        #expect(last.start == 220 * Self.s && last.end == 235 * Self.s && last.counts.taps == 1)
        #expect(meter.close(upTo: 294 * Self.s).isEmpty)
        #expect(meter.close(upTo: 295 * Self.s).map(\.end) == [295 * Self.s])
    }

    @Test func aLongSleepClosesABoundedNumberOfIntervals() {
        var meter = KeyboardMeter(start: 0, intervalLength: 1 * Self.s)
        let closed = meter.close(upTo: 7 * 24 * 3600 * Self.s)
        #expect(closed.count == KeyboardMeter.maximumIntervalsPerClose)
        #expect(closed.last?.end == 7 * 24 * 3600 * Self.s)
        #expect(meter.intervalStart == 7 * 24 * 3600 * Self.s)
        var far = KeyboardMeter(start: .max - 10, intervalLength: 3600 * Self.s)
        #expect(far.close(upTo: .max).count == 0)
        #expect(far.finish(at: .min).end == .max - 10)
    }
}

@Suite struct KeyEventTimesTests {
    @Test func eventTimesAreMappedAndHeldBetweenTheLastEventAndTheRead() {
        var times = KeyEventTimes(start: 1_000)
        // Wall-clock stamps 5 000 ahead of the boot clock: offset −5 000.
        #expect(times.boot(eventTime: 6_100, offset: -5_000, readAt: 1_200) == 1_100)
        #expect(times.boot(eventTime: 6_150, offset: -5_000, readAt: 1_200) == 1_150)
        // A stamp from before the last event (a wall-clock step back) is held at the last event.
        #expect(times.boot(eventTime: 0, offset: -5_000, readAt: 1_200) == 1_150)
        // One from the future is held at the read.
        #expect(times.boot(eventTime: 99_999, offset: -5_000, readAt: 1_200) == 1_200)
        times.drained(at: 1_300)
        #expect(times.boot(eventTime: 6_250, offset: -5_000, readAt: 1_400) == 1_300)
        #expect(times.boot(eventTime: .max, offset: 1, readAt: 1_500) == 1_500)
        #expect(times.boot(eventTime: .min, offset: -1, readAt: 1_600) == 1_600)
    }
}
