/// One PP interval of a PMD PPI frame (measurement type 3, frame type 0): the time between two
/// pulses the optical sensor detected, with the heart rate at that pulse, the sensor's own error
/// estimate and its flags (docs/ble.md, "Polar Measurement Data").
public struct PMDPulseInterval: Equatable, Sendable {
    public var beatsPerMinute: UInt8
    public var milliseconds: UInt16
    public var errorEstimateMilliseconds: UInt16
    /// Bit 0 blocker (motion: the interval is not to be trusted), bit 1 skin contact, bit 2 skin
    /// contact supported; the other bits are kept as sent.
    public var flags: UInt8

    public init(beatsPerMinute: UInt8, milliseconds: UInt16, errorEstimateMilliseconds: UInt16, flags: UInt8) {
        self.beatsPerMinute = beatsPerMinute
        self.milliseconds = milliseconds
        self.errorEstimateMilliseconds = errorEstimateMilliseconds
        self.flags = flags
    }

    public var blocker: Bool { flags & 0x01 != 0 }
    /// Skin contact as the sensor reports it, or nil when it says it cannot tell.
    public var skinContact: Bool? { flags & 0x04 != 0 ? flags & 0x02 != 0 : nil }
}

/// A PMD PPI frame: the 10-byte PMD header, then 6 bytes per interval — heart rate (uint8), PP
/// interval (uint16 ms), error estimate (uint16 ms), flags (uint8) — oldest first. The header's
/// timestamp is that of the last interval's end, or 0 when the device does not stamp it.
public struct PMDPulseIntervalFrame: Equatable, Sendable {
    public var deviceTimestamp: UInt64
    public var intervals: [PMDPulseInterval]

    public static let recordBytes = 6

    public init(deviceTimestamp: UInt64, intervals: [PMDPulseInterval]) {
        self.deviceTimestamp = deviceTimestamp
        self.intervals = intervals
    }

    /// Only raw frame type 0 is defined for PPI; a payload that is not whole records is
    /// `partialSample`, one without records `empty`, more than `sampleLimit` records `tooManySamples`.
    public init(decoding value: [UInt8], sampleLimit: Int = .max) throws(PMDFrame.DecodeError) {
        var reader = ByteReader(value)
        guard let type = try? reader.uint8(), let timestamp = try? reader.uint64(), let rawFrameType = try? reader.uint8() else {
            throw .truncatedHeader
        }
        guard type & 0x3F == PMDMeasurementType.ppi.rawValue, rawFrameType == 0 else {
            throw .unsupportedFrame(measurementType: type & 0x3F, frameType: rawFrameType & 0x7F)
        }
        deviceTimestamp = timestamp
        guard reader.remainingCount % Self.recordBytes == 0 else { throw .partialSample }
        guard reader.remainingCount > 0 else { throw .empty }
        guard reader.remainingCount / Self.recordBytes <= sampleLimit else { throw .tooManySamples(limit: sampleLimit) }
        intervals = []
        intervals.reserveCapacity(reader.remainingCount / Self.recordBytes)
        while !reader.isAtEnd {
            guard let rate = try? reader.uint8(), let interval = try? reader.uint16(), let error = try? reader.uint16(),
                let flags = try? reader.uint8()
            else { throw .partialSample }
            intervals.append(
                PMDPulseInterval(beatsPerMinute: rate, milliseconds: interval, errorEstimateMilliseconds: error, flags: flags))
        }
    }
}
