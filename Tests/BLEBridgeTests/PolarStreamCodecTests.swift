import Testing

@testable import BLEBridge

/// The Polar streams beyond ECG and PPG type 0: ACC (raw and delta-compressed), PPG frame types
/// 7 and 10, PPI. Every vector is written byte by byte from the published layouts
/// (docs/ble.md, "Polar Measurement Data"); the expected values are worked out by hand.
@Suite struct PolarStreamCodecTests {
    static let timestamp: UInt64 = 0x0B18_31AB_ACBA_3B2D
    static var header: [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: timestamp >> (8 * $0)) } }

    /// An H10-style compressed ACC frame (type 1, mG): reference (−12, 980, −200); a block of
    /// 3-bit deltas (+1, −1, +3) (−4, 0, +2); one of 10-bit deltas (−512, +511, −3); one of 1-bit
    /// deltas (−1, 0, −1) (0, −1, 0) — every width's sign extension, values packed LSB first.
    static let compressedACC: [UInt8] =
        [0x02] + header + [0x81] + [0xF4, 0xFF, 0xD4, 0x03, 0x38, 0xFF]
        + [0x03, 0x02, 0xF9, 0x08, 0x01] + [0x0A, 0x01, 0x00, 0xFE, 0xD7, 0x3F] + [0x01, 0x02, 0x15]

    @Test func compressedAccelerometerAcrossWidths() throws {
        let frame = try PMDFrame(decoding: Self.compressedACC)
        #expect(frame.measurementType == 2 && frame.frameType == 1 && frame.isCompressed)
        #expect(frame.deviceTimestamp == Self.timestamp)
        #expect(
            frame.samples == [
                [-12, 980, -200], [-11, 979, -197], [-15, 979, -195], [-527, 1490, -198], [-528, 1490, -199],
                [-528, 1489, -199],
            ])
        #expect(frame.accelerationUnitMicroG == 1_000)
        // The same payload as compressed type 0 carries g (Polar's unit for that frame type).
        var inG = Self.compressedACC
        inG[9] = 0x80
        #expect(try PMDFrame(decoding: inG).accelerationUnitMicroG == 1_000_000)
        #expect(try PMDFrame(decoding: inG).samples.count == 6)
    }

    @Test func rawAccelerometerTypes() throws {
        // Type 0: three int8 per sample.
        let type0 = try PMDFrame(decoding: [0x02] + Self.header + [0x00, 0x80, 0x7F, 0xFF, 0x01, 0x00, 0x02])
        #expect(type0.samples == [[-128, 127, -1], [1, 0, 2]])
        // Type 1 (the H10's raw frames): three int16 mG.
        let type1 = try PMDFrame(
            decoding: [0x02] + Self.header + [0x01, 0x18, 0xFC, 0x00, 0x00, 0xE8, 0x03, 0x01, 0x00, 0xFF, 0xFF, 0xFF, 0x7F])
        #expect(type1.samples == [[-1000, 0, 1000], [1, -1, 32767]])
        #expect(type1.accelerationUnitMicroG == 1_000)
        // Type 2: three int24.
        let type2 = try PMDFrame(
            decoding: [0x02] + Self.header + [0x02, 0x00, 0x00, 0x80, 0xFF, 0xFF, 0x7F, 0x01, 0x00, 0x00])
        #expect(type2.samples == [[-8_388_608, 8_388_607, 1]])
        // A raw frame that stops inside a sample, and compressed type 2 (not defined).
        #expect(throws: PMDFrame.DecodeError.partialSample) {
            try PMDFrame(decoding: [0x02] + Self.header + [0x01, 0x18, 0xFC, 0x00, 0x00, 0xE8])
        }
        #expect(throws: PMDFrame.DecodeError.unsupportedFrame(measurementType: 2, frameType: 2)) {
            try PMDFrame(decoding: [0x02] + Self.header + [0x82, 0, 0, 0, 0, 0, 0])
        }
    }

    /// Fed one byte more at a time, as a notification cut short anywhere would arrive: every
    /// prefix is a value or a typed error, never a trap, and only the whole frame gives all six.
    @Test func dripFedCompressedFrame() {
        for length in 0..<Self.compressedACC.count {
            let prefix = Array(Self.compressedACC.prefix(length))
            do {
                let frame = try PMDFrame(decoding: prefix)
                #expect(frame.samples.count < 6)
            } catch {
                #expect(error == .truncatedHeader || error == .partialSample || error == .empty)
            }
        }
    }

    @Test func hostileCompressedFrames() {
        let reference: [UInt8] = [0x02] + Self.header + [0x81, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]
        // A width no 32-bit value has.
        #expect(throws: PMDFrame.DecodeError.invalidDeltaWidth(33)) { try PMDFrame(decoding: reference + [33, 1]) }
        #expect(throws: PMDFrame.DecodeError.invalidDeltaWidth(255)) { try PMDFrame(decoding: reference + [255, 255]) }
        // A count the bytes do not hold.
        #expect(throws: PMDFrame.DecodeError.partialSample) { try PMDFrame(decoding: reference + [16, 255, 0, 0]) }
        // Width-0 blocks claim 255 samples for two bytes: the caller's bound stops them first.
        let claims = reference + [UInt8](repeating: 0, count: 40).enumerated().map { $0.offset % 2 == 0 ? 0 : 255 }
        #expect(throws: PMDFrame.DecodeError.tooManySamples(limit: 100)) { try PMDFrame(decoding: claims, sampleLimit: 100) }
        // The reference sample cut short.
        #expect(throws: PMDFrame.DecodeError.partialSample) { try PMDFrame(decoding: Array(reference.prefix(13))) }
    }

    /// PPG type 7 (16 optical channels and a status word) and type 10 (8 green, 6 red, 6 infrared
    /// and a status word): 24-bit reference samples, then blocks as for every compressed frame.
    @Test func compressedPPGMultiChannelTypes() throws {
        func le24(_ v: Int32) -> [UInt8] { (0..<3).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        let reference7: [Int32] = (0..<16).map { Int32($0) * 1000 - 8000 } + [0x123]
        // Width 2, one sample: +1 (bits 10) on each optical channel, 0 on the status word.
        let type7 = try PMDFrame(
            decoding: [0x01] + Self.header + [0x87] + reference7.flatMap(le24) + [0x02, 0x01, 0x55, 0x55, 0x55, 0x55, 0x00])
        #expect(type7.samples == [reference7, (0..<16).map { reference7[$0] + 1 } + [0x123]])
        // Width 0, three samples: the reference repeated, for two bytes.
        let reference10: [Int32] = (0..<21).map { -Int32($0) * 4099 }
        let type10 = try PMDFrame(decoding: [0x01] + Self.header + [0x8A] + reference10.flatMap(le24) + [0x00, 0x03])
        #expect(type10.samples == [[Int32]](repeating: reference10, count: 4))
        // Type 7 is defined compressed only.
        #expect(throws: PMDFrame.DecodeError.unsupportedFrame(measurementType: 1, frameType: 7)) {
            try PMDFrame(decoding: [0x01] + Self.header + [0x07] + reference7.flatMap(le24))
        }
    }

    /// PPI: HR 60, PP 1068 ms, error 6 ms, skin contact (flags 6); then HR 61, PP 1050 ms, error
    /// 5 ms, blocker with contact (flags 7); a device that does not report contact (flags 0).
    static let ppi: [UInt8] =
        [0x03] + [UInt8](repeating: 0, count: 8) + [0x00]
        + [0x3C, 0x2C, 0x04, 0x06, 0x00, 0x06] + [0x3D, 0x1A, 0x04, 0x05, 0x00, 0x07] + [0x3E, 0xE8, 0x03, 0x00, 0x01, 0x00]

    @Test func pulseIntervals() throws {
        let frame = try PMDPulseIntervalFrame(decoding: Self.ppi)
        #expect(frame.deviceTimestamp == 0)
        #expect(
            frame.intervals == [
                PMDPulseInterval(beatsPerMinute: 60, milliseconds: 1068, errorEstimateMilliseconds: 6, flags: 6),
                PMDPulseInterval(beatsPerMinute: 61, milliseconds: 1050, errorEstimateMilliseconds: 5, flags: 7),
                PMDPulseInterval(beatsPerMinute: 62, milliseconds: 1000, errorEstimateMilliseconds: 256, flags: 0),
            ])
        #expect(frame.intervals.map(\.blocker) == [false, true, false])
        #expect(frame.intervals.map(\.skinContact) == [true, true, nil])
        for length in 0..<Self.ppi.count {
            do {
                let prefix = try PMDPulseIntervalFrame(decoding: Array(Self.ppi.prefix(length)))
                #expect(prefix.intervals.count < 3)
            } catch {
                #expect(error == .truncatedHeader || error == .partialSample || error == .empty)
            }
        }
        #expect(throws: PMDFrame.DecodeError.unsupportedFrame(measurementType: 3, frameType: 0)) {
            try PMDPulseIntervalFrame(decoding: [0x03] + Self.header + [0x80] + Array(Self.ppi.dropFirst(10)))
        }
        #expect(throws: PMDFrame.DecodeError.tooManySamples(limit: 2)) {
            try PMDPulseIntervalFrame(decoding: Self.ppi, sampleLimit: 2)
        }
    }

    @Test func pulseIntervalTimeline() {
        var timeline = PulseIntervalTimeline()
        let second: Int64 = 1_000_000_000
        // The last interval ends on receipt, each earlier one where the next began.
        let events = timeline.receive(Self.ppi, at: 100 * second)
        #expect(events.count == 1)
        guard case .beats(let beats, _)? = events.first else { return }
        #expect(beats.map(\.time) == [100 * second - 2_050_000_000, 100 * second - 1_000_000_000, 100 * second])
        // A frame received 0.5 s later whose intervals reach back before the last beat: pushed
        // past it, strictly increasing.
        guard case .beats(let later, _)? = timeline.receive(Self.ppi, at: 100 * second + 500_000_000).first else {
            Issue.record("no beats")
            return
        }
        #expect(later.map(\.time) == [100 * second + 1, 100 * second + 2, 100 * second + 500_000_000])
        #expect(timeline.counters.clamped == 2)
        // An interval of 0 or beyond 3 s is not a pulse interval: the frame is a gap.
        var zero = Self.ppi
        zero[11] = 0
        zero[12] = 0
        #expect(
            timeline.receive(zero, at: 102 * second) == [
                .gap(.implausibleFrame, after: later.last?.time, receiveTime: 102 * second)
            ])
        // A partial record: undecodable, a gap.
        #expect(
            timeline.receive(Array(Self.ppi.dropLast()), at: 103 * second) == [
                .gap(.undecodableFrame, after: later.last?.time, receiveTime: 103 * second)
            ])
        // A flood: more intervals than any heart beats in the time.
        var flooded = 0
        for index in 0..<200 {
            if case .gap(.implausibleRate, _, _)? = timeline.receive(Self.ppi, at: 104 * second + Int64(index)).first {
                flooded += 1
            }
        }
        #expect(flooded > 100)
    }
}
