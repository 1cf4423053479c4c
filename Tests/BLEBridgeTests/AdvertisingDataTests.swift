import Testing

@testable import BLEBridge

@Suite struct AdvertisingDataTests {
    // Flags (LE General Discoverable, BR/EDR not supported), complete 16-bit UUIDs 0x180D 0x180F.
    let advertising: [UInt8] = [0x02, 0x01, 0x06, 0x05, 0x03, 0x0D, 0x18, 0x0F, 0x18]
    // Scan response: Complete Local Name "Polar H10 0A0B0C0D".
    let scanResponse: [UInt8] = [0x13, 0x09] + Array("Polar H10 0A0B0C0D".utf8)

    @Test func mergesAdvertisingAndScanResponse() {
        let merged = AdvertisingData(parsing: advertising).merged(with: AdvertisingData(parsing: scanResponse))
        #expect(merged.localName == "Polar H10 0A0B0C0D")
        #expect(merged.serviceUUIDs16 == [0x180D, 0x180F])
        #expect(AdvertisingData(parsing: advertising + scanResponse) == merged)
        #expect(!merged.isTruncated)
    }

    @Test func completeNameWinsOverShortened() {
        let data = AdvertisingData(parsing: [0x04, 0x08] + Array("H10".utf8) + [0x05, 0x09] + Array("Full".utf8))
        #expect(data.localName == "Full")
        #expect(AdvertisingData(parsing: [0x04, 0x08] + Array("H10".utf8)).localName == "H10")
        #expect(AdvertisingData(parsing: advertising).localName == nil)
    }

    @Test func aStructureRunningPastTheEndIsCutAndMarked() {
        let bytes = advertising + scanResponse
        for length in 0..<bytes.count {
            let data = AdvertisingData(parsing: Array(bytes.prefix(length)))
            #expect(data.structures.count <= 3)
            if length == 3 || length == 9 || length == 0 { #expect(!data.isTruncated) } else { #expect(data.isTruncated) }
        }
        // Zero length ends the significant part; the rest is padding.
        #expect(AdvertisingData(parsing: [0x02, 0x01, 0x06, 0x00, 0xFF, 0xFF]).structures.count == 1)
        // Longer than 62 bytes: cut at 62 and marked.
        #expect(AdvertisingData(parsing: [UInt8](repeating: 0x01, count: 80)).isTruncated)
    }

    @Test func encodesWhatItParsed() {
        #expect(AdvertisingData(parsing: advertising).encoded() == advertising)
    }
}
