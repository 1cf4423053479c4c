import Foundation
import SensorKitModel
import Testing

@testable import SensorDaemon

@Suite struct ControlLedgerTests {
    @Test func stakesKeepTheirFirstStart() throws {
        let key = ControlLedger.Key(app: "com.example.study", sensor: .accelerometer)
        var ledger = ControlLedger()
        #expect(ledger.status(key) == .notDetermined)
        ledger.request(key)
        #expect(ledger.pending == [key])
        ledger.decide(key, granted: true, at: 10, by: "uid 1000")
        ledger.startRecording(key, at: 100)
        ledger.stopRecording(key)
        ledger.startRecording(key, at: 500)
        #expect(ledger.stakes[key] == .init(firstStart: 100, active: true))
        #expect(ledger.sensorsToRecord == [.accelerometer])
    }

    @Test func withdrawingConsentEndsTheStake() {
        let key = ControlLedger.Key(app: "a", sensor: .rotationRate)
        var ledger = ControlLedger()
        ledger.decide(key, granted: true, at: 1, by: "x")
        ledger.startRecording(key, at: 2)
        ledger.decide(key, granted: false, at: 3, by: "x")
        #expect(ledger.status(key) == .denied)
        #expect(ledger.sensorsToRecord.isEmpty)
    }
}
