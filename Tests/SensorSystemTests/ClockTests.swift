import Testing
import SensorKitModel
@testable import SensorSystem

@Suite struct LinuxClockTests {
    @Test func boottimeIncreasesAndBootIDIsRead() {
        let clock = LinuxSystemClock()
        let a = clock.boottimeNanoseconds()
        let b = clock.boottimeNanoseconds()
        #expect(b >= a)
        #expect(clock.bootID.rawValue.count == 36)
    }
}
