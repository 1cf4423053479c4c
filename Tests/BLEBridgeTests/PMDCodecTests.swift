import Testing

@testable import BLEBridge

/// Vectors written from Polar's published PMD layouts (docs/ble.md, "Polar PMD").
@Suite struct PMDControlTests {
    @Test func commands() {
        #expect(PMDCommand.startECG.encoded() == [0x02, 0x00, 0x00, 0x01, 0x82, 0x00, 0x01, 0x01, 0x0E, 0x00])
        #expect(PMDCommand.getMeasurementSettings(.ecg).encoded() == [0x01, 0x00])
        #expect(PMDCommand.stopMeasurement(.ppg).encoded() == [0x03, 0x01])
        let acc = PMDCommand.startMeasurement(
            .acc, settings: [PMDSetting(.sampleRate, [200]), PMDSetting(.resolution, [16]), PMDSetting(.range, [8])])
        #expect(acc.encoded() == [0x02, 0x02, 0x00, 0x01, 0xC8, 0x00, 0x01, 0x01, 0x10, 0x00, 0x02, 0x01, 0x08, 0x00])
    }

    @Test func responsesAndContinuations() throws {
        let first = try PMDControlPointIndication(decoding: [0xF0, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x82, 0x00])
        let second = try PMDControlPointIndication(decoding: [0xF0, 0x01, 0x00, 0x00, 0x00, 0x01, 0x01, 0x0E, 0x00])
        guard case .response(let a) = first, case .response(let b) = second else {
            Issue.record("not responses")
            return
        }
        #expect(a.more && a.status == .success)
        var assembler = PMDResponseAssembler()
        #expect(assembler.add(a) == .incomplete)
        guard case .complete(let joined) = assembler.add(b) else {
            Issue.record("the continuation was not joined")
            return
        }
        #expect(
            try PMDSetting.decodeList(joined.parameters[...]) == [PMDSetting(.sampleRate, [130]), PMDSetting(.resolution, [14])])
        #expect(assembler.add(b) == .complete(b))
        #expect(
            try PMDControlPointIndication(decoding: [0xF0, 0x02, 0x00, 0x0A, 0x00])
                == .response(
                    PMDResponse(
                        opcode: 2, measurementType: 0, status: .invalidMTU, more: false, parameters: [])))
        #expect(try PMDControlPointIndication(decoding: [0x01, 0x00, 0x01]) == .measurementsStopped([0, 1]))
        for length in 0..<5 {
            #expect(throws: PMDControlPointIndication.DecodeError.truncated) {
                try PMDControlPointIndication(decoding: Array([0xF0, 0x02, 0x00, 0x00, 0x00].prefix(length)))
            }
        }
        #expect(throws: PMDSetting.DecodeError.truncated) { try PMDSetting.decodeList([0x00, 0x02, 0x82, 0x00, 0x01][...]) }
        #expect(throws: PMDSetting.DecodeError.unknownSetting(9)) { try PMDSetting.decodeList([0x09, 0x00][...]) }
    }

    @Test func features() {
        #expect(PMDFeatures(decoding: [0x0F, 0x05, 0x00])?.types == [.ecg, .acc])
        #expect(PMDFeatures(decoding: [0x0F, 0x2A, 0x02])?.types == [.ppg, .ppi, .gyro, .sdkMode])
        #expect(PMDFeatures(decoding: [0x0F]) == nil)
        #expect(PMDFeatures(decoding: [0x00, 0x05]) == nil)
    }
}

@Suite struct PMDFrameTests {
    static let timestamp: UInt64 = 0x0B18_31AB_ACBA_3B2D
    static var header: [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: timestamp >> (8 * $0)) } }

    @Test func rawECGInMicrovolts() throws {
        // Three samples: −1 µV, 1000 µV, −8388608 µV (the 24-bit minimum).
        let bytes: [UInt8] = [0x00] + Self.header + [0x00, 0xFF, 0xFF, 0xFF, 0xE8, 0x03, 0x00, 0x00, 0x00, 0x80]
        let frame = try PMDFrame(decoding: bytes)
        #expect(frame.deviceTimestamp == Self.timestamp)
        #expect(frame.samples == [[-1], [1000], [-8_388_608]])
        #expect(!frame.isCompressed)
    }

    @Test func rawPPGChannelsAndAmbient() throws {
        let sample: [UInt8] = [0x01, 0x00, 0x00, 0x02, 0x00, 0x00, 0xFD, 0xFF, 0xFF, 0x04, 0x00, 0x00]
        let frame = try PMDFrame(decoding: [0x01] + Self.header + [0x00] + sample + sample)
        #expect(frame.samples == [[1, 2, -3, 4], [1, 2, -3, 4]])
    }

    /// A compressed PPG frame: reference [−517445, −484483, −476780, −646945], then a block of
    /// 2 samples with 4-bit deltas (+1, −1, +7, −8) and (0, 0, −2, +3).
    @Test func deltaCompressedPPG() throws {
        func le24(_ v: Int32) -> [UInt8] {
            let b = UInt32(bitPattern: v); return [UInt8(b & 0xFF), UInt8(b >> 8 & 0xFF), UInt8(b >> 16 & 0xFF)]
        }
        let reference: [Int32] = [-517_445, -484_483, -476_780, -646_945]
        // Nibbles LSB first: 1, F(−1), 7, 8(−8) | 0, 0, E(−2), 3.
        let block: [UInt8] = [0x04, 0x02, 0xF1, 0x87, 0x00, 0x3E]
        let frame = try PMDFrame(decoding: [0x01] + Self.header + [0x80] + reference.flatMap(le24) + block)
        #expect(frame.isCompressed)
        #expect(
            frame.samples == [reference, [-517_444, -484_484, -476_773, -646_953], [-517_444, -484_484, -476_775, -646_950]])
        // Cut anywhere inside the block: a partial sample, never a trap.
        for cut in 1..<block.count {
            #expect(throws: PMDFrame.DecodeError.partialSample) {
                try PMDFrame(decoding: [0x01] + Self.header + [0x80] + reference.flatMap(le24) + block.prefix(cut))
            }
        }
        #expect(throws: PMDFrame.DecodeError.invalidDeltaWidth(40)) {
            try PMDFrame(decoding: [0x01] + Self.header + [0x80] + reference.flatMap(le24) + [40, 1])
        }
    }

    @Test func truncatedAndPartialFrames() {
        let full: [UInt8] = [0x00] + Self.header + [0x00, 0xFF, 0xFF, 0xFF, 0xE8, 0x03, 0x00]
        for length in 0..<10 {
            #expect(throws: PMDFrame.DecodeError.truncatedHeader) { try PMDFrame(decoding: Array(full.prefix(length))) }
        }
        #expect(throws: PMDFrame.DecodeError.empty) { try PMDFrame(decoding: Array(full.prefix(10))) }
        for length in [11, 12, 14, 15] {
            #expect(throws: PMDFrame.DecodeError.partialSample) { try PMDFrame(decoding: Array(full.prefix(length))) }
        }
        #expect(throws: PMDFrame.DecodeError.unsupportedFrame(measurementType: 2, frameType: 5)) {
            try PMDFrame(decoding: [0x02] + Self.header + [0x05, 0, 0, 0, 0, 0, 0])
        }
    }
}
