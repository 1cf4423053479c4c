import Foundation

/// The loudness of a stretch of audio (Apple's `SRAudioLevel`, iOS 17).
///
/// Apple's `timeRange: CMTimeRange` is left out: CoreMedia does not exist on Linux.
public final class SRAudioLevel: NSObject, Sendable {
    /// Loudness in decibels.
    public let loudness: Double

    public init(loudness: Double) {
        self.loudness = loudness
    }
}

/// The estimated emotional content of a stretch of speech (Apple's `SRSpeechExpression`, iOS 17).
///
/// Apple's `timeRange: CMTimeRange` is left out: CoreMedia does not exist on Linux.
public final class SRSpeechExpression: NSObject, Sendable {
    /// The version of the algorithm.
    public let version: String
    public let confidence: Double
    public let mood: Double
    public let valence: Double
    public let activation: Double
    public let dominance: Double

    public init(
        version: String, confidence: Double, mood: Double, valence: Double, activation: Double, dominance: Double
    ) {
        self.version = version
        self.confidence = confidence
        self.mood = mood
        self.valence = valence
        self.activation = activation
        self.dominance = dominance
    }
}

/// Metrics of a stretch of speech to Siri or on a phone call (Apple's `SRSpeechMetrics`, iOS 17
/// shape), one per fetch result of the `siriSpeechMetrics` and `telephonySpeechMetrics` sensors.
/// No Linux source yet.
///
/// Left out, because their types come from frameworks that do not exist on Linux:
/// `speechRecognition: SFSpeechRecognitionResult?` (Speech) and
/// `soundClassification: SNClassificationResult?` (SoundAnalysis). Study code that reads them
/// will not compile here; everything else matches Apple's names and types.
public final class SRSpeechMetrics: NSObject, Sendable {
    /// Apple's `SRSpeechMetricsSessionFlags` (`NS_OPTIONS(NSUInteger)`; `Default` = 0 is `[]`).
    public struct SessionFlags: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }

        /// The audio bypassed the system voice processor.
        public static let bypassVoiceProcessing = SessionFlags(rawValue: 1 << 0)
    }

    /// Identifies the audio session the metrics belong to.
    public let sessionIdentifier: String
    public let sessionFlags: SessionFlags
    /// The wall-clock time of the metrics.
    public let timestamp: Date
    /// Seconds from the start of the audio to these metrics (iOS 17.2).
    public let timeSinceAudioStart: TimeInterval
    public let audioLevel: SRAudioLevel?
    public let speechExpression: SRSpeechExpression?

    public init(
        sessionIdentifier: String, sessionFlags: SessionFlags, timestamp: Date, timeSinceAudioStart: TimeInterval,
        audioLevel: SRAudioLevel? = nil, speechExpression: SRSpeechExpression? = nil
    ) {
        self.sessionIdentifier = sessionIdentifier
        self.sessionFlags = sessionFlags
        self.timestamp = timestamp
        self.timeSinceAudioStart = timeSinceAudioStart
        self.audioLevel = audioLevel
        self.speechExpression = speechExpression
    }
}
