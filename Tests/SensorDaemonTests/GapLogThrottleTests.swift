import Testing

@testable import SensorDaemon

/// A stream's steady loss is logged once an hour, and the next line says how many gaps went
/// without one (`GapLogThrottle`).
@Suite struct GapLogThrottleTests {
    static let minute: Int64 = 60_000_000_000

    @Test func theSameReasonIsHeldBackForAnHourAndTheNextLineCountsWhatWasHeld() {
        var throttle = GapLogThrottle()
        let why = "not observed: the app in front"
        #expect(throttle.admit(why, endingAt: 15 * Self.minute) == 0)
        for quarter in 2...4 { #expect(throttle.admit(why, endingAt: Int64(quarter) * 15 * Self.minute) == nil) }
        // An hour after the line logged: logged again, saying three were held back.
        #expect(throttle.admit(why, endingAt: 75 * Self.minute) == 3)
        #expect(throttle.admit(why, endingAt: 90 * Self.minute) == nil)
    }

    @Test func anotherReasonIsLoggedAtOnce() {
        var throttle = GapLogThrottle()
        #expect(throttle.admit("logind gone", endingAt: Self.minute) == 0)
        #expect(throttle.admit("logind gone", endingAt: 2 * Self.minute) == nil)
        #expect(throttle.admit("kernel FIFO overflow", endingAt: 3 * Self.minute) == 1)
        #expect(throttle.admit("logind gone", endingAt: 4 * Self.minute) == 0)
    }

    @Test func hostileTimesDoNotTrap() {
        var throttle = GapLogThrottle()
        #expect(throttle.admit("x", endingAt: .max) == 0)
        #expect(throttle.admit("x", endingAt: .min) == nil)
        #expect(throttle.admit("x", endingAt: .max) == nil)
    }
}
