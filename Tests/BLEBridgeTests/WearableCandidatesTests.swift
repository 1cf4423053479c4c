import Testing

@testable import BLEBridge

/// Which advertiser a `name =` wearable binds (docs/ble.md, "States of a wearable").
@Suite struct WearableCandidatesTests {
    static let impostor = WearableCandidates.Candidate(address: "C0:FF:EE:00:00:02", name: "Polar H10 FAKE")
    static let strap = WearableCandidates.Candidate(address: "C0:FF:EE:00:00:09", name: "Polar H10 REAL")

    @Test func everyCandidateIsReportedOnce() {
        var candidates = WearableCandidates()
        #expect(candidates.choose([Self.impostor]).new == [Self.impostor])
        let second = candidates.choose([Self.impostor, Self.strap])
        #expect(second.new == [Self.strap])
        #expect(candidates.choose([Self.strap, Self.impostor]).new.isEmpty)
    }

    @Test func aLinkEndedWithoutContactPutsTheAddressBehindTheOthers() {
        var candidates = WearableCandidates()
        #expect(candidates.choose([Self.impostor, Self.strap]).chosen == Self.impostor)  // by address, nothing known yet
        candidates.linkEnded(Self.impostor.address, contactSeen: false)
        #expect(candidates.choose([Self.impostor, Self.strap]).chosen == Self.strap)
        #expect(candidates.choose([Self.impostor]).chosen == Self.impostor)  // alone, it is still tried
    }

    @Test func theAddressThatShowedContactComesFirst() {
        var candidates = WearableCandidates()
        candidates.contactSeen(Self.strap.address)
        candidates.linkEnded(Self.strap.address, contactSeen: false)  // a later link without contact does not demote it
        #expect(candidates.choose([Self.impostor, Self.strap]).chosen == Self.strap)
        #expect(candidates.trusted == Self.strap.address)
    }

    @Test func memoryIsBounded() {
        var candidates = WearableCandidates()
        let many = (0..<1000).map {
            WearableCandidates.Candidate(address: String(format: "C0:FF:EE:00:%02X:%02X", $0 / 256, $0 % 256), name: "x")
        }
        #expect(candidates.choose(many).new.count == WearableCandidates.remembered)
        for candidate in many { candidates.linkEnded(candidate.address, contactSeen: false) }
        #expect(candidates.choose(many).new.isEmpty)
    }
}
