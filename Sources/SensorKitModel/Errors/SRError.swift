/// The error domain of SensorKit errors, `"SRErrorDomain"` as printed in real errors.
public let SRErrorDomain = "SRErrorDomain"

/// Apple's `SRError` (an `NS_ERROR_ENUM`): usable as `error as? SRError` and `srError.code`.
///
/// Besides the code it carries a human message, because on Linux the daemon explains *why*
/// (which entitlement is missing, which range overlapped the hold) where iOS stays silent.
public struct SRError: Error, Hashable, Sendable, CustomStringConvertible {
    /// `SRErrorCode`, values 0…4 exactly as in Apple's header.
    public enum Code: Int, Hashable, Sendable, CaseIterable {
        case invalidEntitlement = 0
        case noAuthorization = 1
        case dataInaccessible = 2
        case fetchRequestInvalid = 3
        case promptDeclined = 4

        /// The header's comment for each code; the default message.
        public var summary: String {
            switch self {
            case .invalidEntitlement: return "No valid entitlement found"
            case .noAuthorization: return "Insufficient authorization to perform the action"
            case .dataInaccessible: return "Data is not accessible at this time"
            case .fetchRequestInvalid: return "Fetch request contained invalid values"
            case .promptDeclined: return "Authorization request not completed"
            }
        }
    }

    public static let invalidEntitlement = Code.invalidEntitlement
    public static let noAuthorization = Code.noAuthorization
    public static let dataInaccessible = Code.dataInaccessible
    public static let fetchRequestInvalid = Code.fetchRequestInvalid
    public static let promptDeclined = Code.promptDeclined
    public static let errorDomain = SRErrorDomain

    public let code: Code
    /// What went wrong, for a person: names the sensor, the app, the range.
    public let message: String

    public init(_ code: Code, message: String? = nil) {
        self.code = code
        self.message = message ?? code.summary
    }

    /// Mirrors `NSError.code` for code that reads the integer.
    public var errorCode: Int { code.rawValue }
    public var localizedDescription: String { message }
    public var description: String { "\(SRErrorDomain) Code=\(code.rawValue) \"\(message)\"" }
}

/// Lets `catch SRError.noAuthorization` match, as with Apple's bridged error structs.
public func ~= (code: SRError.Code, error: any Error) -> Bool {
    (error as? SRError)?.code == code
}
