import ModemBridge
import Testing

/// The interval accounting driven by hand: calls counted where first seen, connected time split
/// at the boundary, messages where they complete, contacts by digest, unobserved intervals.
@Suite struct UsageIntervalTests {
    static let second: Int64 = 1_000_000_000
    static let minute = 60 * second
    static let quarter = 15 * minute
    let key = ContactKey(k0: 1, k1: 2)

    func contact(_ number: String) -> ContactDigest? { key.digest(number: number) }

    func reports(_ actions: [UsageAction]) -> [UsageReport] {
        actions.compactMap { if case .report(let report) = $0 { report } else { nil } }
    }

    @Test func intervalsEndOnTheWallClocksQuarterHours() {
        // 10:07:30 wall time: the first interval ends at 10:15:00, 7.5 minutes on.
        let realtime = (10 * 60 + 7) * Self.minute + 30 * Self.second
        #expect(
            UsageInterval.firstEnd(boot: 1_000, realtime: realtime, length: Self.quarter) == 1_000 + 7 * Self.minute + 30
                * Self.second)
        #expect(UsageInterval.firstEnd(boot: 0, realtime: 45 * Self.minute, length: Self.quarter) == Self.quarter)
    }

    @Test func aCallSpanningTwoIntervalsIsCountedOnceAndItsTimeSplit() {
        var interval = UsageInterval(start: 0, firstEnd: Self.quarter, length: Self.quarter)
        var actions = interval.on(.observable(true), at: 0)
        let call = "/org/freedesktop/ModemManager1/Call/1"
        actions += interval.on(
            .call(call, direction: .incoming, state: .ringingIn, contact: contact("+447700900123")), at: 10 * Self.minute)
        actions += interval.on(.call(call, direction: .unknown, state: .active, contact: nil), at: 12 * Self.minute)
        actions += interval.on(.call(call, direction: .unknown, state: .terminated, contact: nil), at: 20 * Self.minute)
        actions += interval.close(upTo: 2 * Self.quarter)
        #expect(
            reports(actions) == [
                UsageReport(
                    start: 0, end: Self.quarter,
                    phone: PhoneUsage(incomingCalls: 1, callNanoseconds: 3 * Self.minute, uniqueContacts: 1),
                    messages: MessagesUsage()),
                UsageReport(
                    start: Self.quarter, end: 2 * Self.quarter, phone: PhoneUsage(callNanoseconds: 5 * Self.minute),
                    messages: MessagesUsage()),
            ])
    }

    @Test func heldTimeCountsAndACallGoneMidwayStopsCounting() {
        var interval = UsageInterval(start: 0, firstEnd: Self.quarter, length: Self.quarter)
        _ = interval.on(.observable(true), at: 0)
        _ = interval.on(.call("a", direction: .outgoing, state: .dialing, contact: contact("0123")), at: 0)
        _ = interval.on(.call("a", direction: .unknown, state: .active, contact: nil), at: Self.minute)
        _ = interval.on(.call("a", direction: .unknown, state: .held, contact: nil), at: 2 * Self.minute)
        _ = interval.on(.call("a", direction: .unknown, state: .active, contact: nil), at: 3 * Self.minute)
        _ = interval.on(.callGone("a"), at: 4 * Self.minute)
        // A second call from the same number, a missed one from another, and a withheld one.
        _ = interval.on(.call("b", direction: .incoming, state: .ringingIn, contact: contact("01 23")), at: 5 * Self.minute)
        _ = interval.on(.call("c", direction: .incoming, state: .terminated, contact: contact("999")), at: 6 * Self.minute)
        _ = interval.on(.call("d", direction: .incoming, state: .ringingIn, contact: contact("")), at: 7 * Self.minute)
        let report = reports(interval.close(upTo: Self.quarter))
        #expect(
            report.map(\.phone) == [
                PhoneUsage(incomingCalls: 3, outgoingCalls: 1, callNanoseconds: 3 * Self.minute, uniqueContacts: 2)
            ])
    }

    @Test func messagesCountWhereTheyCompleteWithTheirContacts() {
        var interval = UsageInterval(start: 0, firstEnd: Self.quarter, length: Self.quarter)
        _ = interval.on(.observable(true), at: 0)
        _ = interval.on(.message(.incoming, contact: contact("+15550100")), at: Self.minute)
        _ = interval.on(.message(.outgoing, contact: contact("+1 555 0100")), at: 2 * Self.minute)
        _ = interval.on(.message(.incoming, contact: contact("BANK")), at: 3 * Self.minute)
        let report = reports(interval.close(upTo: Self.quarter))
        #expect(report.map(\.messages) == [MessagesUsage(incomingMessages: 2, outgoingMessages: 1, uniqueContacts: 2)])
        #expect(report.map(\.phone) == [PhoneUsage()])
    }

    @Test func anIntervalNoModemCouldObserveIsADeletionNotZeros() {
        var interval = UsageInterval(start: 0, firstEnd: Self.quarter, length: Self.quarter)
        var actions = interval.close(upTo: Self.quarter)
        #expect(actions == [.unobserved(from: 0, to: Self.quarter)])
        // A modem for part of the next interval: a report; gone before the third: a deletion.
        actions = interval.on(.observable(true), at: Self.quarter + Self.minute)
        actions += interval.on(.observable(false), at: Self.quarter + 2 * Self.minute)
        actions += interval.close(upTo: 3 * Self.quarter)
        #expect(
            actions == [
                .report(UsageReport(start: Self.quarter, end: 2 * Self.quarter, phone: PhoneUsage(), messages: MessagesUsage())),
                .unobserved(from: 2 * Self.quarter, to: 3 * Self.quarter),
            ])
    }

    @Test func aModemManagerLeavingEndsItsConnectedCalls() {
        var interval = UsageInterval(start: 0, firstEnd: Self.quarter, length: Self.quarter)
        _ = interval.on(.observable(true), at: 0)
        _ = interval.on(.call("a", direction: .outgoing, state: .active, contact: contact("1")), at: Self.minute)
        _ = interval.on(.observable(false), at: 3 * Self.minute)
        _ = interval.on(.observable(true), at: 4 * Self.minute)
        _ = interval.on(.call("a2", direction: .outgoing, state: .active, contact: contact("1")), at: 5 * Self.minute)
        let report = reports([interval.finish(at: 6 * Self.minute)])
        #expect(
            report == [
                UsageReport(
                    start: 0, end: 6 * Self.minute,
                    phone: PhoneUsage(outgoingCalls: 2, callNanoseconds: 3 * Self.minute, uniqueContacts: 1),
                    messages: MessagesUsage())
            ])
    }

    @Test func aLongSleepClosesBoundedIntervalsAndHostileCountsAreBounded() {
        var interval = UsageInterval(start: 0, firstEnd: Self.quarter, length: Self.quarter)
        _ = interval.on(.observable(true), at: 0)
        let actions = interval.close(upTo: 30 * 24 * 60 * Self.minute)
        #expect(actions.count == UsageInterval.maximumIntervalsPerClose)
        for n in 0..<(UsageInterval.maximumLiveCalls + 10) {
            _ = interval.on(.call("\(n)", direction: .incoming, state: .active, contact: contact("\(n)")), at: interval.start)
        }
        let last = reports([interval.finish(at: interval.start + Self.minute)])
        #expect(last.first?.phone.incomingCalls == UsageInterval.maximumLiveCalls)
        // Times from a hostile clock saturate instead of trapping.
        var wild = UsageInterval(start: .max - 10, firstEnd: .max, length: .max)
        _ = wild.on(.call("x", direction: .incoming, state: .active, contact: nil), at: .max - 5)
        _ = wild.on(.call("x", direction: .incoming, state: .terminated, contact: nil), at: .min)
        _ = wild.close(upTo: .max)
    }
}

@Suite struct ContactKeyTests {
    /// SipHash-2-4's published test vector: key 00…0f, message 00…0e (15 bytes).
    @Test func matchesTheReferenceVector() {
        let key = ContactKey(k0: 0x0706_0504_0302_0100, k1: 0x0f0e_0d0c_0b0a_0908)
        // The paper's Appendix A: 00 01 … 0e hashes to a129ca6149be45e5.
        let digest = key.digest(number: "")
        #expect(digest == nil)
        #expect(key.siphash(Array(0..<15)) == 0xa129_ca61_49be_45e5)
        #expect(key.siphash([]) == 0x726f_db47_dd0e_0e31)
    }

    @Test func spellingsOfOneNumberAreOneContactAndKeysDoNotCompare() {
        let key = ContactKey(k0: 7, k1: 9)
        #expect(key.digest(number: "+44 7700 900-123") == key.digest(number: "+447700900123"))
        #expect(key.digest(number: "+447700900123") != key.digest(number: "447700900123"))
        #expect(key.digest(number: "bank") == key.digest(number: "BANK"))
        #expect(key.digest(number: " + ") == nil)
        #expect(ContactKey(k0: 7, k1: 10).digest(number: "+447700900123") != key.digest(number: "+447700900123"))
        #expect(ContactNumber.canonical(String(repeating: "9", count: 10_000)).count == ContactNumber.maximumLength)
    }
}
