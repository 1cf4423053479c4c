import Foundation

/// One facial expression and how strongly it shows (Apple's `SRFaceMetricsExpression`, iOS 17).
/// `identifier` is one of the UUID strings Apple lists for partial and whole-face expressions.
public final class SRFaceMetricsExpression: NSObject, Sendable {
    public let identifier: String
    public let value: Double

    public init(identifier: String, value: Double) {
        self.identifier = identifier
        self.value = value
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SRFaceMetricsExpression else { return false }
        return identifier == other.identifier && value == other.value
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(identifier)
        hasher.combine(value)
        return hasher.finalize()
    }
}

/// Metrics of the face in front of the camera during a camera session (Apple's `SRFaceMetrics`,
/// iOS 17), one per fetch result of SensorKit's `faceMetrics` sensor. No Linux source yet.
///
/// Apple's `faceAnchor: ARFaceAnchor` is left out: ARKit does not exist on Linux.
public final class SRFaceMetrics: NSObject, Sendable {
    /// Apple's `SRFaceMetricsContext` (`NS_OPTIONS(NSUInteger)`): what the person was doing.
    public struct Context: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }

        public static let deviceUnlock = Context(rawValue: 1 << 0)
        public static let messagingAppUsage = Context(rawValue: 1 << 1)
    }

    /// The version of the algorithm.
    public let version: String
    /// Identifies the camera session.
    public let sessionIdentifier: String
    public let context: Context
    public let wholeFaceExpressions: [SRFaceMetricsExpression]
    public let partialFaceExpressions: [SRFaceMetricsExpression]

    public init(
        version: String, sessionIdentifier: String, context: Context,
        wholeFaceExpressions: [SRFaceMetricsExpression], partialFaceExpressions: [SRFaceMetricsExpression]
    ) {
        self.version = version
        self.sessionIdentifier = sessionIdentifier
        self.context = context
        self.wholeFaceExpressions = wholeFaceExpressions
        self.partialFaceExpressions = partialFaceExpressions
    }
}
