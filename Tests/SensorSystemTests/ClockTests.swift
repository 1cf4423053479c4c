import SensorKitModel
import Testing

@testable import SensorSystem

@Suite struct LinuxClockTests {
    @Test func boottimeIncreasesAndBootIDIsRead() {
        let clock = LinuxSystemClock()
        let a = clock.boottimeNanoseconds()
        let b = clock.boottimeNanoseconds()
        #expect(b >= a)
        #expect(clock.bootID.rawValue.count == 36)
    }

    /// adjtimex through the funnel: a read needs no privilege, and the answer is the one the
    /// timeline uses to decide whether a new boot may be anchored by the wall clock.
    @Test func theKernelSaysWhetherTheWallClockIsSynchronised() throws {
        let state = try LinuxSystemClock.clockState()
        #expect(state.state >= 0 && state.state <= 5)  // TIME_OK … TIME_ERROR
        #expect(LinuxSystemClock().wallClockSynchronized() == !state.unsynchronised)
    }
}
