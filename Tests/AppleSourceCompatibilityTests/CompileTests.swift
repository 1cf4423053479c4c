import AppleStyleStudy
import Foundation
import SensorKit
import Testing

/// The study code above compiles against `import SensorKit`; these check that it also behaves.
@Suite struct AppleSpellingTests {
    @Test func timeSpellingsAgree() {
        let now = SRAbsoluteTime.current()
        let viaCF = SRAbsoluteTime.fromCFAbsoluteTime(_cf: CFAbsoluteTimeGetCurrent())
        #expect(abs(viaCF.rawValue - now.rawValue) < 1)
        #expect(abs(now.toCFAbsoluteTime() - CFAbsoluteTimeGetCurrent()) < 1)
        #expect(otherApplePatterns().count == 7)
    }

    @Test func currentDeviceIsThisLinuxHost() {
        let device = SRDevice.current
        #expect(device.systemName == "Linux")
        #expect(!device.systemVersion.isEmpty)
        #expect(!device.name.isEmpty)
        #expect(SRFetchRequest().device.isEqual(device))
    }

    @Test func readersStartUnsetAndAFetchWithoutRangeFails() async {
        let recorder = StudyRecorder()
        recorder.accelerometerReader.delegate = recorder
        recorder.accelerometerReader.fetch(SRFetchRequest())  // from/to unset: fetchRequestInvalid
        recorder.accelerometerReader.delegateQueue.sync {}
        #expect(recorder.errors == [.fetchRequestInvalid])
    }
}
