import Foundation
import SensorKit
import Testing

@Test func absoluteTimeSpellings() {
    let now = SRAbsoluteTime.current()
    let dayAgo = SRAbsoluteTime(CFAbsoluteTimeGetCurrent() - 86400)
    let fromCF = SRAbsoluteTime.fromCFAbsoluteTime(_cf: Date().timeIntervalSinceReferenceDate)
    #expect(abs(fromCF.rawValue - now.rawValue) < 1)
    #expect(dayAgo.rawValue < CFAbsoluteTimeGetCurrent())
}
