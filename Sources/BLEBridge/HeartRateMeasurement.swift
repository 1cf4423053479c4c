/// One Heart Rate Measurement notification (characteristic 0x2A37 of the Heart Rate Service).
/// Layout: flags; BPM as uint8 or uint16 (flags bit 0); energy expended uint16 kJ (bit 3); RR
/// intervals uint16 in 1/1024 s, oldest first, filling the rest (bit 4). Bits 5–7 are reserved and
/// ignored. See docs/ble.md.
public struct HeartRateMeasurement: Equatable, Sendable {
    /// Sensor Contact Status (flags bits 1–2). Only `.notInContact` and `.inContact` are states;
    /// 0 and 1 both mean the feature is not supported.
    public enum SensorContact: UInt8, Sendable {
        case notSupported = 0
        case notSupportedAlternate = 1
        case notInContact = 2
        case inContact = 3

        /// The on-wrist state this value reports, or nil when the strap cannot tell.
        public var isInContact: Bool? {
            switch self {
            case .notSupported, .notSupportedAlternate: nil
            case .notInContact: false
            case .inContact: true
            }
        }
    }

    public enum DecodeError: Error, Equatable, Sendable {
        case truncated
        /// RR bytes left over: an odd count cannot be whole intervals.
        case partialRRInterval
    }

    public var beatsPerMinute: UInt16
    public var sensorContact: SensorContact
    public var energyExpendedKilojoules: UInt16?
    /// RR intervals in units of 1/1024 s, oldest first, exactly as sent.
    public var rrIntervals: [UInt16]

    public init(
        beatsPerMinute: UInt16, sensorContact: SensorContact, energyExpendedKilojoules: UInt16? = nil, rrIntervals: [UInt16] = []
    ) {
        self.beatsPerMinute = beatsPerMinute
        self.sensorContact = sensorContact
        self.energyExpendedKilojoules = energyExpendedKilojoules
        self.rrIntervals = rrIntervals
    }

    public init(decoding value: [UInt8]) throws(DecodeError) {
        var reader = ByteReader(value)
        do {
            let flags = try reader.uint8()
            beatsPerMinute = flags & 0x01 != 0 ? try reader.uint16() : UInt16(try reader.uint8())
            sensorContact = SensorContact(rawValue: (flags >> 1) & 0x03)!
            energyExpendedKilojoules = flags & 0x08 != 0 ? try reader.uint16() : nil
            rrIntervals = []
            if flags & 0x10 != 0 {
                guard reader.remainingCount % 2 == 0 else { throw DecodeError.partialRRInterval }
                while !reader.isAtEnd { rrIntervals.append(try reader.uint16()) }
            }
        } catch is ByteReader.Truncated {
            throw .truncated
        } catch let error as DecodeError {
            throw error
        } catch {
            throw .truncated
        }
    }

    /// An RR interval in seconds.
    public static func seconds(ofRRInterval rr: UInt16) -> Double { Double(rr) / 1024 }
}

/// Body Sensor Location (0x2A38), one byte; values 7–255 are reserved and kept raw.
public struct BodySensorLocation: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public init?(decoding value: [UInt8]) {
        guard value.count == 1 else { return nil }
        rawValue = value[0]
    }

    public var description: String {
        switch rawValue {
        case 0: "other"
        case 1: "chest"
        case 2: "wrist"
        case 3: "finger"
        case 4: "hand"
        case 5: "ear lobe"
        case 6: "foot"
        default: "reserved(\(rawValue))"
        }
    }
}

/// Battery Level (0x2A19): one byte, 0–100 %; anything above 100 is not a level.
public enum BatteryLevel {
    public static func percent(decoding value: [UInt8]) -> Int? {
        guard value.count == 1, value[0] <= 100 else { return nil }
        return Int(value[0])
    }
}
