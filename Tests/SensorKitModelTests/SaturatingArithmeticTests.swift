import SensorKitModel
import Testing

@Suite struct SaturatingArithmeticTests {
    @Test func resultsThatFitAreExact() {
        #expect(Int64(40).addingSaturating(2) == 42)
        #expect(Int64(40).subtractingSaturating(-2) == 42)
        #expect(Int64(-21).multipliedSaturating(by: -2) == 42)
        #expect(UInt32(3).subtractingSaturating(1) == 2)
    }

    @Test func overflowStopsAtTheNearestBound() {
        #expect(Int64.max.addingSaturating(1) == .max)
        #expect(Int64.min.addingSaturating(-1) == .min)
        #expect(Int64.min.subtractingSaturating(1) == .min)
        #expect(Int64.max.subtractingSaturating(Int64.min) == .max)
        #expect(Int64(-2).subtractingSaturating(.max) == .min)
        #expect(Int64.max.multipliedSaturating(by: 2) == .max)
        #expect(Int64.min.multipliedSaturating(by: -1) == .max)
        #expect(Int64.max.multipliedSaturating(by: -2) == .min)
        #expect(UInt64(0).subtractingSaturating(1) == 0)
        #expect(UInt8.max.addingSaturating(1) == .max)
    }
}
