/// Polar Measurement Data (PMD) control point: the commands written to it, the responses it
/// indicates, its feature read and the settings TLVs (docs/ble.md, "Polar PMD").
public enum PMDMeasurementType: UInt8, Sendable, CaseIterable {
    case ecg = 0
    case ppg = 1
    case acc = 2
    case ppi = 3
    case gyro = 5
    case magnetometer = 6
    case skinTemperature = 7
    case sdkMode = 9
    case location = 10
    case pressure = 11
    case temperature = 12
}

/// One settings TLV: `type(1) count(1) value×count`; value width by type.
public struct PMDSetting: Equatable, Sendable {
    public enum Kind: UInt8, Sendable {
        case sampleRate = 0
        case resolution = 1
        case range = 2
        case rangeMilliunit = 3
        case channels = 4
        case factor = 5
        case security = 6

        var valueWidth: Int {
            switch self {
            case .sampleRate, .resolution, .range: 2
            case .rangeMilliunit, .factor: 4
            case .channels: 1
            case .security: 16
            }
        }
    }

    public var kind: Kind
    /// Each value as its raw little-endian bytes' unsigned integer (FACTOR: the float's bit pattern;
    /// SECURITY is never parsed into values).
    public var values: [UInt32]

    public init(_ kind: Kind, _ values: [UInt32]) {
        self.kind = kind
        self.values = values
    }

    /// FACTOR's value as a float (1.0 when absent).
    public var factor: Float? { kind == .factor ? values.first.map { Float(bitPattern: $0) } : nil }

    public func encoded() -> [UInt8] {
        var bytes = [kind.rawValue, UInt8(truncatingIfNeeded: values.count)]
        for value in values {
            for index in 0..<min(kind.valueWidth, 4) { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * index))) }
        }
        return bytes
    }

    public enum DecodeError: Error, Equatable, Sendable {
        case truncated
        case unknownSetting(UInt8)
    }

    /// Parses a whole TLV list.
    public static func decodeList(_ bytes: ArraySlice<UInt8>) throws(DecodeError) -> [PMDSetting] {
        var reader = ByteReader(bytes)
        var result: [PMDSetting] = []
        do {
            while !reader.isAtEnd {
                let rawKind = try reader.uint8()
                guard let kind = Kind(rawValue: rawKind) else { throw DecodeError.unknownSetting(rawKind) }
                let count = Int(try reader.uint8())
                var values: [UInt32] = []
                for _ in 0..<count {
                    let raw = try reader.take(kind.valueWidth)
                    if kind == .security { continue }
                    var value: UInt32 = 0
                    for index in raw.indices.reversed() { value = value << 8 | UInt32(raw[index]) }
                    values.append(value)
                }
                result.append(PMDSetting(kind, values))
            }
        } catch let error as DecodeError {
            throw error
        } catch {
            throw .truncated
        }
        return result
    }
}

/// A command written to the control point (write with response).
public enum PMDCommand: Equatable, Sendable {
    case getMeasurementSettings(PMDMeasurementType)
    case startMeasurement(PMDMeasurementType, settings: [PMDSetting])
    case stopMeasurement(PMDMeasurementType)

    public var opcode: UInt8 {
        switch self {
        case .getMeasurementSettings: 0x01
        case .startMeasurement: 0x02
        case .stopMeasurement: 0x03
        }
    }

    /// Online (streamed) measurements: the recording-type bit 7 of the measurement byte is 0.
    public func encoded() -> [UInt8] {
        switch self {
        case .getMeasurementSettings(let type), .stopMeasurement(let type):
            [opcode, type.rawValue]
        case .startMeasurement(let type, let settings):
            [opcode, type.rawValue] + settings.flatMap { $0.encoded() }
        }
    }

    /// ECG as the H10 streams it: 130 Hz, 14-bit resolution.
    public static let startECG = PMDCommand.startMeasurement(
        .ecg, settings: [PMDSetting(.sampleRate, [130]), PMDSetting(.resolution, [14])])
}

/// A control-point indication.
public enum PMDControlPointIndication: Equatable, Sendable {
    /// `F0 opcode type status more params…`.
    case response(PMDResponse)
    /// `01 type…`: the device stopped these streams on its own.
    case measurementsStopped([UInt8])

    public enum DecodeError: Error, Equatable, Sendable {
        case truncated
        case unknownKind(UInt8)
    }

    public init(decoding value: [UInt8]) throws(DecodeError) {
        guard let first = value.first else { throw .truncated }
        switch first {
        case 0xF0:
            guard value.count >= 5 else { throw .truncated }
            self = .response(
                PMDResponse(
                    opcode: value[1], measurementType: value[2] & 0x3F, status: PMDStatus(rawValue: value[3]),
                    more: value[4] != 0, parameters: Array(value[5...])))
        case 0x01:
            self = .measurementsStopped(value.dropFirst().map { $0 & 0x3F })
        default:
            throw .unknownKind(first)
        }
    }
}

public struct PMDResponse: Equatable, Sendable {
    public var opcode: UInt8
    public var measurementType: UInt8
    public var status: PMDStatus
    /// More indications with this opcode follow; their parameters continue these.
    public var more: Bool
    public var parameters: [UInt8]

    public init(opcode: UInt8, measurementType: UInt8, status: PMDStatus, more: Bool, parameters: [UInt8]) {
        self.opcode = opcode
        self.measurementType = measurementType
        self.status = status
        self.more = more
        self.parameters = parameters
    }

}

public struct PMDStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let success = PMDStatus(rawValue: 0)
    public static let notSupported = PMDStatus(rawValue: 3)
    public static let alreadyInState = PMDStatus(rawValue: 6)
    public static let invalidMTU = PMDStatus(rawValue: 10)

    public var description: String {
        let names = [
            "success", "invalid op code", "invalid measurement type", "not supported", "invalid length",
            "invalid parameter", "already in state", "invalid resolution", "invalid sample rate", "invalid range",
            "invalid MTU", "invalid number of channels", "invalid state", "device in charger", "disk full",
        ]
        return Int(rawValue) < names.count ? names[Int(rawValue)] : "status \(rawValue)"
    }
}

/// The control point's read value: `0F` then a bitmap of the measurement types the device streams.
public struct PMDFeatures: Equatable, Sendable {
    public var types: Set<PMDMeasurementType>

    public init?(decoding value: [UInt8]) {
        guard value.count >= 2, value[0] == 0x0F else { return nil }
        types = []
        for type in PMDMeasurementType.allCases {
            let byte = 1 + Int(type.rawValue) / 8
            if byte < value.count, value[byte] & (1 << (type.rawValue % 8)) != 0 { types.insert(type) }
        }
    }
}
