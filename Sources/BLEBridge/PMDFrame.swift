/// One PMD data notification: `type(1) timestamp(8, ns since 2000-01-01, of the LAST sample)
/// frameType(1) payload`. Frame type bit 7 marks a delta-compressed frame. Decoded here (the
/// table in `layout`; docs/ble.md, "Polar Measurement Data"): ECG type 0; PPG type 0 raw or
/// compressed, types 7 and 10 compressed; ACC types 0, 1 and 2 raw, 0 and 1 compressed. PPI
/// (measurement type 3) has its own record layout: `PMDPulseIntervalFrame`.
public struct PMDFrame: Equatable, Sendable {
    public var measurementType: UInt8
    /// Device nanoseconds since 2000-01-01T00:00:00 of the frame's last sample.
    public var deviceTimestamp: UInt64
    public var frameType: UInt8
    public var isCompressed: Bool
    /// One array of channel values per sample, oldest first (ECG: [µV]; PPG type 0: [ppg0, ppg1,
    /// ppg2, ambient]; ACC: [x, y, z] in the frame type's unit, `accelerationUnitMicroG`).
    public var samples: [[Int32]]

    public init(measurementType: UInt8, deviceTimestamp: UInt64, frameType: UInt8, isCompressed: Bool, samples: [[Int32]]) {
        self.measurementType = measurementType
        self.deviceTimestamp = deviceTimestamp
        self.frameType = frameType
        self.isCompressed = isCompressed
        self.samples = samples
    }

    public enum DecodeError: Error, Equatable, Sendable {
        /// Shorter than the 10-byte header.
        case truncatedHeader
        /// A measurement/frame type this decoder does not know: the frame is skipped, counted.
        case unsupportedFrame(measurementType: UInt8, frameType: UInt8)
        /// A raw payload that is not a whole number of samples, or a compressed one that ends
        /// inside its reference sample or a block: dropped and recorded as a gap.
        case partialSample
        /// A delta block claims a width no channel value can have.
        case invalidDeltaWidth(UInt8)
        /// A frame with no samples at all.
        case empty
        /// More samples than the caller's limit (a delta frame of width-0 blocks claims thousands
        /// from a few bytes): refused before they are built.
        case tooManySamples(limit: Int)
    }

    /// The layout of a decodable frame type: channels and bytes per channel value.
    struct Layout {
        var channels: Int
        var bytesPerValue: Int
    }

    /// Channels and value size of each decodable (measurement type, frame type, compressed); for a
    /// compressed frame the size is its reference sample's. Anything else is `unsupportedFrame`.
    static func layout(measurementType: UInt8, frameType: UInt8, compressed: Bool) -> Layout? {
        let ecg = PMDMeasurementType.ecg.rawValue
        let ppg = PMDMeasurementType.ppg.rawValue
        let acc = PMDMeasurementType.acc.rawValue
        switch (measurementType, frameType, compressed) {
        case (ecg, 0, _): return Layout(channels: 1, bytesPerValue: 3)
        case (ppg, 0, _): return Layout(channels: 4, bytesPerValue: 3)
        // 16 optical channels and a status word; 8 green, 6 red, 6 infrared and a status word.
        case (ppg, 7, true): return Layout(channels: 17, bytesPerValue: 3)
        case (ppg, 10, true): return Layout(channels: 21, bytesPerValue: 3)
        case (acc, 0, false): return Layout(channels: 3, bytesPerValue: 1)
        case (acc, 1, false): return Layout(channels: 3, bytesPerValue: 2)
        case (acc, 2, false): return Layout(channels: 3, bytesPerValue: 3)
        case (acc, 0, true), (acc, 1, true): return Layout(channels: 3, bytesPerValue: 2)
        default: return nil
        }
    }

    /// Micro-g per unit of an ACC frame's values before FACTOR: compressed type 0 carries g, every
    /// other ACC frame type mG (the H10's unit). Nil for other measurements.
    public var accelerationUnitMicroG: Int64? {
        guard measurementType == PMDMeasurementType.acc.rawValue else { return nil }
        return isCompressed && frameType == 0 ? 1_000_000 : 1_000
    }

    /// `sampleLimit` bounds the samples one frame may hold (decoding stops there and throws):
    /// what it costs to decode a frame is bounded by the caller, not by the device.
    public init(decoding value: [UInt8], sampleLimit: Int = .max) throws(DecodeError) {
        var reader = ByteReader(value)
        guard let type = try? reader.uint8(), let timestamp = try? reader.uint64(), let rawFrameType = try? reader.uint8() else {
            throw .truncatedHeader
        }
        measurementType = type & 0x3F
        deviceTimestamp = timestamp
        frameType = rawFrameType & 0x7F
        isCompressed = rawFrameType & 0x80 != 0
        guard let layout = Self.layout(measurementType: measurementType, frameType: frameType, compressed: isCompressed) else {
            throw .unsupportedFrame(measurementType: measurementType, frameType: frameType)
        }
        let payload = reader.rest()
        samples =
            isCompressed
            ? try Self.decodeDeltas(payload, layout, limit: sampleLimit)
            : try Self.decodeRaw(payload, layout, limit: sampleLimit)
        guard !samples.isEmpty else { throw .empty }
    }

    static func decodeRaw(_ payload: ArraySlice<UInt8>, _ layout: Layout, limit: Int) throws(DecodeError) -> [[Int32]] {
        let sampleBytes = layout.channels * layout.bytesPerValue
        guard payload.count % sampleBytes == 0 else { throw .partialSample }
        guard payload.count / sampleBytes <= limit else { throw .tooManySamples(limit: limit) }
        var reader = ByteReader(payload)
        var result: [[Int32]] = []
        result.reserveCapacity(payload.count / sampleBytes)
        while !reader.isAtEnd {
            var sample: [Int32] = []
            for _ in 0..<layout.channels {
                guard let value = try? reader.signed(width: layout.bytesPerValue) else { throw .partialSample }
                sample.append(value)
            }
            result.append(sample)
        }
        return result
    }

    /// Reference sample, then blocks `width(1) count(1) bits…`: `count` samples of `channels`
    /// deltas, each `width` bits two's-complement, packed least significant bit first.
    static func decodeDeltas(_ payload: ArraySlice<UInt8>, _ layout: Layout, limit: Int) throws(DecodeError) -> [[Int32]] {
        var reader = ByteReader(payload)
        var current: [Int32] = []
        for _ in 0..<layout.channels {
            guard let value = try? reader.signed(width: layout.bytesPerValue) else { throw .partialSample }
            current.append(value)
        }
        var result = [current]
        while !reader.isAtEnd {
            guard let width = try? reader.uint8(), let count = try? reader.uint8() else { throw .partialSample }
            guard width <= 32 else { throw .invalidDeltaWidth(width) }
            guard Int(count) <= limit - result.count else { throw .tooManySamples(limit: limit) }
            let bitCount = Int(width) * Int(count) * layout.channels
            guard let bits = try? reader.take((bitCount + 7) / 8) else { throw .partialSample }
            var bitIndex = 0
            for _ in 0..<Int(count) {
                for channel in 0..<layout.channels {
                    var raw: UInt32 = 0
                    for bit in 0..<Int(width) {
                        let position = bitIndex + bit
                        if bits[bits.startIndex + position / 8] & (1 << UInt8(position % 8)) != 0 { raw |= 1 << UInt32(bit) }
                    }
                    bitIndex += Int(width)
                    current[channel] = current[channel] &+ LittleEndianInteger.signExtend(raw, bits: Int(width))
                }
                result.append(current)
            }
        }
        return result
    }
}

/// PMD device time: nanoseconds since 2000-01-01T00:00:00.
public enum PMDTime {
    /// Seconds from the Unix epoch to 2000-01-01.
    public static let epoch2000UnixSeconds: Int64 = 946_684_800
    /// Where an H10 restarts its clock after losing power: 2019-01-01T00:00:00 on the 2000 epoch.
    public static let resetInstant: UInt64 = 599_616_000_000_000_000
}
