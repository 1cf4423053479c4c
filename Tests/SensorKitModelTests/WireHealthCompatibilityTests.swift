import Foundation
import SensorKitModel
import Testing

/// `created` and `wantedSince` were added to `health`'s streams: a reply from an older daemon
/// (without them) still decodes, and a newer reply's extra fields are ignored by the decoder of
/// an older client, as JSONDecoder ignores unknown keys.
@Suite struct WireHealthCompatibilityTests {
    static let olderStream = """
        {"sensor":"com.apple.SensorKit.als","device":"this","recording":true,"lastMinute":1,"lastDay":2,
         "gaps":[],"spans":[[5,9]],"records":[]}
        """

    @Test func aReplyWithoutTheNewFieldsDecodesAndLeavesTheStartUnknown() throws {
        let stream = try JSONDecoder().decode(WireStreamHealth.self, from: Data(Self.olderStream.utf8))
        #expect(stream.created == nil && stream.wantedSince == nil)
        #expect(stream.recordingSince(now: 100) == nil, "the picture then calls the time unexplained, as before")
    }

    @Test func recordingBeginsWhenTheStreamExistsAndAnAppWantsIt() throws {
        var stream = try JSONDecoder().decode(WireStreamHealth.self, from: Data(Self.olderStream.utf8))
        stream.created = 10
        #expect(stream.recordingSince(now: 100) == 101, "no app ever wanted it: not yet recording up to now")
        stream.wantedSince = 40
        #expect(stream.recordingSince(now: 100) == 40)
        stream.created = 60
        #expect(stream.recordingSince(now: 100) == 60)
        let encoded = try JSONEncoder().encode(stream)
        let object = try JSONSerialization.jsonObject(with: encoded) as? [String: Any]
        #expect(object?["created"] as? Int == 60 && object?["wantedSince"] as? Int == 40)
    }
}
