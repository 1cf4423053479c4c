import Foundation

/// Keyboard use over a period (Apple's `SRKeyboardMetrics`), one per fetch result of SensorKit's
/// `keyboardMetrics` sensor. No Linux source yet: the type exists so study code compiles.
///
/// Every property of Apple's class is here with Apple's name and type. To keep the initialiser
/// usable, the integer counters and the single distributions are passed as dictionaries keyed by
/// `Counter`, `LengthMetric` and `DurationMetric` (sensorkitd additions named after the properties);
/// a counter that is absent reads 0 and an absent distribution has no sample values.
public final class SRKeyboardMetrics: NSObject, Sendable {
    /// Samples drawn from a probability distribution (Apple's `SRKeyboardProbabilityMetric`).
    public final class ProbabilityMetric<UnitType: Unit>: NSObject, Sendable {
        public let distributionSampleValues: [Measurement<UnitType>]

        public init(distributionSampleValues: [Measurement<UnitType>]) {
            self.distributionSampleValues = distributionSampleValues
        }

        public override func isEqual(_ object: Any?) -> Bool {
            guard let other = object as? ProbabilityMetric<UnitType> else { return false }
            return distributionSampleValues == other.distributionSampleValues
        }

        public override var hash: Int { distributionSampleValues.count }
    }

    /// Apple's `SRKeyboardMetricsSentimentCategory` (`NSInteger`, iOS 15), values as in the header.
    public enum SentimentCategory: Int, Sendable, CaseIterable {
        case absolutist = 0
        case down = 1
        case death = 2
        case anxiety = 3
        case anger = 4
        case health = 5
        case positive = 6
        case sad = 7
        case lowEnergy = 8
        case confused = 9
    }

    /// **sensorkitd addition.** The integer counters, named after their properties.
    public enum Counter: String, Sendable, CaseIterable {
        case totalWords, totalAlteredWords, totalTaps, totalDrags, totalDeletes, totalEmojis, totalPaths
        case totalAutoCorrections, totalSpaceCorrections, totalRetroCorrections, totalTranspositionCorrections
        case totalInsertKeyCorrections, totalSkipTouchCorrections, totalNearKeyCorrections
        case totalSubstitutionCorrections, totalHitTestCorrections
        case totalPauses, totalPathPauses, totalTypingEpisodes
    }

    /// **sensorkitd addition.** The distributions of distances (millimetres), named after their properties.
    public enum LengthMetric: String, Sendable, CaseIterable {
        case upErrorDistance, downErrorDistance, spaceUpErrorDistance, spaceDownErrorDistance
        case deleteUpErrorDistance, deleteDownErrorDistance
        case shortWordCharKeyUpErrorDistance, shortWordCharKeyDownErrorDistance
    }

    /// **sensorkitd addition.** The distributions of durations (seconds), named after their properties.
    public enum DurationMetric: String, Sendable, CaseIterable {
        case touchDownUp, touchDownDown, touchUpDown, spaceTouchDownUp, deleteTouchDownUp
        case shortWordCharKeyTouchDownUp, shortWordCharKeyToCharKey
        case charKeyToAnyTapKey, anyTapToCharKey, charKeyToSpaceKey, spaceToCharKey, spaceToSpaceKey
        case spaceToDeleteKey, deleteToSpaceKey, charKeyToDelete, deleteToCharKey, deleteToDelete
        case spaceToShiftKey, deleteToShiftKey, spaceToPlaneChangeKey, deleteToPlaneChangeKey
        case charKeyToPlaneChangeKey, planeChangeKeyToCharKey, anyTapToPlaneChangeKey, planeChangeToAnyTap
        case charKeyToPrediction, spaceToPredictionKey
        case pathToPath, pathToSpace, pathToDelete, spaceToPath, deleteToPath
    }

    // Configuration and session.
    /// The period the metrics cover, in seconds.
    public let duration: TimeInterval
    /// The keyboard's identifier in the keyboard list.
    public let keyboardIdentifier: String
    /// The version of the metrics algorithm.
    public let version: String
    /// The keyboard's width, held in millimetres.
    public let width: Measurement<UnitLength>
    /// The keyboard's height, held in millimetres.
    public let height: Measurement<UnitLength>
    /// The input modes (languages/layouts) active during the period.
    public let inputModes: [String]
    /// The keyboard sessions that contributed, to correlate with other streams.
    public let sessionIdentifiers: [String]

    // Scalars that are not integer counters.
    public let totalPathTime: TimeInterval
    /// Held in millimetres.
    public let totalPathLength: Measurement<UnitLength>
    public let totalTypingDuration: TimeInterval
    /// Characters per second.
    public let typingSpeed: Double
    /// QuickPath words per minute.
    public let pathTypingSpeed: Double

    // Positional distributions (index = position in the word, or run length for deletes).
    public let longWordUpErrorDistance: [ProbabilityMetric<UnitLength>]
    public let longWordDownErrorDistance: [ProbabilityMetric<UnitLength>]
    public let longWordTouchDownUp: [ProbabilityMetric<UnitDuration>]
    public let longWordTouchDownDown: [ProbabilityMetric<UnitDuration>]
    public let longWordTouchUpDown: [ProbabilityMetric<UnitDuration>]
    public let deleteToDeletes: [ProbabilityMetric<UnitDuration>]
    public let pathErrorDistanceRatio: [NSNumber]

    private let counters: [Counter: Int]
    private let lengthMetrics: [LengthMetric: ProbabilityMetric<UnitLength>]
    private let durationMetrics: [DurationMetric: ProbabilityMetric<UnitDuration>]
    private let wordCounts: [SentimentCategory: Int]
    private let emojiCounts: [SentimentCategory: Int]

    public init(
        duration: TimeInterval, keyboardIdentifier: String, version: String,
        width: Measurement<UnitLength>, height: Measurement<UnitLength>,
        inputModes: [String] = [], sessionIdentifiers: [String] = [],
        counters: [Counter: Int] = [:],
        totalPathTime: TimeInterval = 0,
        totalPathLength: Measurement<UnitLength> = Measurement(value: 0, unit: .millimeters),
        totalTypingDuration: TimeInterval = 0, typingSpeed: Double = 0, pathTypingSpeed: Double = 0,
        lengthMetrics: [LengthMetric: ProbabilityMetric<UnitLength>] = [:],
        durationMetrics: [DurationMetric: ProbabilityMetric<UnitDuration>] = [:],
        longWordUpErrorDistance: [ProbabilityMetric<UnitLength>] = [],
        longWordDownErrorDistance: [ProbabilityMetric<UnitLength>] = [],
        longWordTouchDownUp: [ProbabilityMetric<UnitDuration>] = [],
        longWordTouchDownDown: [ProbabilityMetric<UnitDuration>] = [],
        longWordTouchUpDown: [ProbabilityMetric<UnitDuration>] = [],
        deleteToDeletes: [ProbabilityMetric<UnitDuration>] = [],
        pathErrorDistanceRatio: [NSNumber] = [],
        wordCounts: [SentimentCategory: Int] = [:], emojiCounts: [SentimentCategory: Int] = [:]
    ) {
        self.duration = duration
        self.keyboardIdentifier = keyboardIdentifier
        self.version = version
        self.width = width.expressed(in: .millimeters)
        self.height = height.expressed(in: .millimeters)
        self.inputModes = inputModes
        self.sessionIdentifiers = sessionIdentifiers
        self.counters = counters
        self.totalPathTime = totalPathTime
        self.totalPathLength = totalPathLength.expressed(in: .millimeters)
        self.totalTypingDuration = totalTypingDuration
        self.typingSpeed = typingSpeed
        self.pathTypingSpeed = pathTypingSpeed
        self.lengthMetrics = lengthMetrics
        self.durationMetrics = durationMetrics
        self.longWordUpErrorDistance = longWordUpErrorDistance
        self.longWordDownErrorDistance = longWordDownErrorDistance
        self.longWordTouchDownUp = longWordTouchDownUp
        self.longWordTouchDownDown = longWordTouchDownDown
        self.longWordTouchUpDown = longWordTouchUpDown
        self.deleteToDeletes = deleteToDeletes
        self.pathErrorDistanceRatio = pathErrorDistanceRatio
        self.wordCounts = wordCounts
        self.emojiCounts = emojiCounts
    }

    /// The number of typed words that convey `category`.
    public func wordCount(for category: SentimentCategory) -> Int { wordCounts[category] ?? 0 }
    /// The number of typed emoji that convey `category`.
    public func emojiCount(for category: SentimentCategory) -> Int { emojiCounts[category] ?? 0 }

    /// **sensorkitd addition.** A counter by name; 0 when the report has none.
    public func count(_ counter: Counter) -> Int { counters[counter] ?? 0 }
    /// **sensorkitd addition.** A distance distribution by name; empty when the report has none.
    public func metric(_ name: LengthMetric) -> ProbabilityMetric<UnitLength> {
        lengthMetrics[name] ?? ProbabilityMetric(distributionSampleValues: [])
    }
    /// **sensorkitd addition.** A duration distribution by name; empty when the report has none.
    public func metric(_ name: DurationMetric) -> ProbabilityMetric<UnitDuration> {
        durationMetrics[name] ?? ProbabilityMetric(distributionSampleValues: [])
    }

    // Apple's integer counters.
    public var totalWords: Int { count(.totalWords) }
    public var totalAlteredWords: Int { count(.totalAlteredWords) }
    public var totalTaps: Int { count(.totalTaps) }
    public var totalDrags: Int { count(.totalDrags) }
    public var totalDeletes: Int { count(.totalDeletes) }
    public var totalEmojis: Int { count(.totalEmojis) }
    public var totalPaths: Int { count(.totalPaths) }
    public var totalAutoCorrections: Int { count(.totalAutoCorrections) }
    public var totalSpaceCorrections: Int { count(.totalSpaceCorrections) }
    public var totalRetroCorrections: Int { count(.totalRetroCorrections) }
    public var totalTranspositionCorrections: Int { count(.totalTranspositionCorrections) }
    public var totalInsertKeyCorrections: Int { count(.totalInsertKeyCorrections) }
    public var totalSkipTouchCorrections: Int { count(.totalSkipTouchCorrections) }
    public var totalNearKeyCorrections: Int { count(.totalNearKeyCorrections) }
    public var totalSubstitutionCorrections: Int { count(.totalSubstitutionCorrections) }
    public var totalHitTestCorrections: Int { count(.totalHitTestCorrections) }
    public var totalPauses: Int { count(.totalPauses) }
    public var totalPathPauses: Int { count(.totalPathPauses) }
    public var totalTypingEpisodes: Int { count(.totalTypingEpisodes) }

    // Apple's distance distributions.
    public var upErrorDistance: ProbabilityMetric<UnitLength> { metric(.upErrorDistance) }
    public var downErrorDistance: ProbabilityMetric<UnitLength> { metric(.downErrorDistance) }
    public var spaceUpErrorDistance: ProbabilityMetric<UnitLength> { metric(.spaceUpErrorDistance) }
    public var spaceDownErrorDistance: ProbabilityMetric<UnitLength> { metric(.spaceDownErrorDistance) }
    public var deleteUpErrorDistance: ProbabilityMetric<UnitLength> { metric(.deleteUpErrorDistance) }
    public var deleteDownErrorDistance: ProbabilityMetric<UnitLength> { metric(.deleteDownErrorDistance) }
    public var shortWordCharKeyUpErrorDistance: ProbabilityMetric<UnitLength> {
        metric(.shortWordCharKeyUpErrorDistance)
    }
    public var shortWordCharKeyDownErrorDistance: ProbabilityMetric<UnitLength> {
        metric(.shortWordCharKeyDownErrorDistance)
    }

    // Apple's duration distributions.
    public var touchDownUp: ProbabilityMetric<UnitDuration> { metric(.touchDownUp) }
    public var touchDownDown: ProbabilityMetric<UnitDuration> { metric(.touchDownDown) }
    public var touchUpDown: ProbabilityMetric<UnitDuration> { metric(.touchUpDown) }
    public var spaceTouchDownUp: ProbabilityMetric<UnitDuration> { metric(.spaceTouchDownUp) }
    public var deleteTouchDownUp: ProbabilityMetric<UnitDuration> { metric(.deleteTouchDownUp) }
    public var shortWordCharKeyTouchDownUp: ProbabilityMetric<UnitDuration> { metric(.shortWordCharKeyTouchDownUp) }
    public var shortWordCharKeyToCharKey: ProbabilityMetric<UnitDuration> { metric(.shortWordCharKeyToCharKey) }
    public var charKeyToAnyTapKey: ProbabilityMetric<UnitDuration> { metric(.charKeyToAnyTapKey) }
    public var anyTapToCharKey: ProbabilityMetric<UnitDuration> { metric(.anyTapToCharKey) }
    public var charKeyToSpaceKey: ProbabilityMetric<UnitDuration> { metric(.charKeyToSpaceKey) }
    public var spaceToCharKey: ProbabilityMetric<UnitDuration> { metric(.spaceToCharKey) }
    public var spaceToSpaceKey: ProbabilityMetric<UnitDuration> { metric(.spaceToSpaceKey) }
    public var spaceToDeleteKey: ProbabilityMetric<UnitDuration> { metric(.spaceToDeleteKey) }
    public var deleteToSpaceKey: ProbabilityMetric<UnitDuration> { metric(.deleteToSpaceKey) }
    public var charKeyToDelete: ProbabilityMetric<UnitDuration> { metric(.charKeyToDelete) }
    public var deleteToCharKey: ProbabilityMetric<UnitDuration> { metric(.deleteToCharKey) }
    public var deleteToDelete: ProbabilityMetric<UnitDuration> { metric(.deleteToDelete) }
    public var spaceToShiftKey: ProbabilityMetric<UnitDuration> { metric(.spaceToShiftKey) }
    public var deleteToShiftKey: ProbabilityMetric<UnitDuration> { metric(.deleteToShiftKey) }
    public var spaceToPlaneChangeKey: ProbabilityMetric<UnitDuration> { metric(.spaceToPlaneChangeKey) }
    public var deleteToPlaneChangeKey: ProbabilityMetric<UnitDuration> { metric(.deleteToPlaneChangeKey) }
    public var charKeyToPlaneChangeKey: ProbabilityMetric<UnitDuration> { metric(.charKeyToPlaneChangeKey) }
    public var planeChangeKeyToCharKey: ProbabilityMetric<UnitDuration> { metric(.planeChangeKeyToCharKey) }
    public var anyTapToPlaneChangeKey: ProbabilityMetric<UnitDuration> { metric(.anyTapToPlaneChangeKey) }
    public var planeChangeToAnyTap: ProbabilityMetric<UnitDuration> { metric(.planeChangeToAnyTap) }
    public var charKeyToPrediction: ProbabilityMetric<UnitDuration> { metric(.charKeyToPrediction) }
    public var spaceToPredictionKey: ProbabilityMetric<UnitDuration> { metric(.spaceToPredictionKey) }
    public var pathToPath: ProbabilityMetric<UnitDuration> { metric(.pathToPath) }
    public var pathToSpace: ProbabilityMetric<UnitDuration> { metric(.pathToSpace) }
    public var pathToDelete: ProbabilityMetric<UnitDuration> { metric(.pathToDelete) }
    public var spaceToPath: ProbabilityMetric<UnitDuration> { metric(.spaceToPath) }
    public var deleteToPath: ProbabilityMetric<UnitDuration> { metric(.deleteToPath) }
}
