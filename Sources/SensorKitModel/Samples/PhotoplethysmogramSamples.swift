import Foundation

/// One reading of one optical channel of a PPG sensor (Apple's `SRPhotoplethysmogramOpticalSample`,
/// iOS 17.4).
///
/// On Linux: one channel of a Polar PMD PPG frame; `emitter`/`activePhotodiodeIndexes` name the
/// LED and photodiodes as the wearable reports them, and the ambient channel is a sample with its
/// own `signalIdentifier`.
public final class SRPhotoplethysmogramOpticalSample: NSObject, Sendable {
    /// Apple's `SRPhotoplethysmogramOpticalSampleCondition` (an `NSString` typed enum).
    ///
    /// Apple does not publish the strings behind the constants; sensorkitd uses the constant names
    /// as raw values. Compare with the constants, never with literals.
    public struct Condition: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let signalSaturation = Condition(
            rawValue: "SRPhotoplethysmogramOpticalSampleConditionSignalSaturation")
        public static let unreliableNoise = Condition(
            rawValue: "SRPhotoplethysmogramOpticalSampleConditionUnreliableNoise")
    }

    /// The noise estimates of a reading (Apple's Swift overlay `NoiseTerms`).
    public struct NoiseTerms: Sendable {
        public let whiteNoise: Double
        public let pinkNoise: Double
        public let backgroundNoise: Double
        public let backgroundNoiseOffset: Double

        /// sensorkitd addition: Apple's overlay has no public initialiser.
        public init(whiteNoise: Double, pinkNoise: Double, backgroundNoise: Double, backgroundNoiseOffset: Double) {
            self.whiteNoise = whiteNoise
            self.pinkNoise = pinkNoise
            self.backgroundNoise = backgroundNoise
            self.backgroundNoiseOffset = backgroundNoiseOffset
        }
    }

    /// The index of the LED that lit the skin.
    public let emitter: Int
    /// The photodiodes that read the light.
    public let activePhotodiodeIndexes: IndexSet
    /// Identifies the signal this reading belongs to, across samples.
    public let signalIdentifier: Int
    /// The LED's design wavelength, held in nanometres.
    public let nominalWavelength: Measurement<UnitLength>
    /// The LED's temperature-compensated wavelength, held in nanometres.
    public let effectiveWavelength: Measurement<UnitLength>
    /// Held in hertz.
    public let samplingFrequency: Measurement<UnitFrequency>
    /// Nanoseconds after the parent `SRPhotoplethysmogramSample.startDate`.
    public let nanosecondsSinceStart: Int64
    /// The reflectance, normalised; nil when the reading is invalid.
    public let normalizedReflectance: Double?
    /// Nil when the reading is invalid or the sensor gives no noise estimates.
    public let noiseTerms: NoiseTerms?
    public let conditions: [Condition]

    public init(
        emitter: Int, activePhotodiodeIndexes: IndexSet, signalIdentifier: Int,
        nominalWavelength: Measurement<UnitLength>, effectiveWavelength: Measurement<UnitLength>,
        samplingFrequency: Measurement<UnitFrequency>, nanosecondsSinceStart: Int64,
        normalizedReflectance: Double?, noiseTerms: NoiseTerms? = nil, conditions: [Condition] = []
    ) {
        self.emitter = emitter
        self.activePhotodiodeIndexes = activePhotodiodeIndexes
        self.signalIdentifier = signalIdentifier
        self.nominalWavelength = nominalWavelength.expressed(in: .nanometers)
        self.effectiveWavelength = effectiveWavelength.expressed(in: .nanometers)
        self.samplingFrequency = samplingFrequency.expressed(in: .hertz)
        self.nanosecondsSinceStart = nanosecondsSinceStart
        self.normalizedReflectance = normalizedReflectance
        self.noiseTerms = noiseTerms
        self.conditions = conditions
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SRPhotoplethysmogramOpticalSample else { return false }
        return emitter == other.emitter && activePhotodiodeIndexes == other.activePhotodiodeIndexes
            && signalIdentifier == other.signalIdentifier && nominalWavelength == other.nominalWavelength
            && effectiveWavelength == other.effectiveWavelength && samplingFrequency == other.samplingFrequency
            && nanosecondsSinceStart == other.nanosecondsSinceStart
            && normalizedReflectance == other.normalizedReflectance
            && noiseTerms?.whiteNoise == other.noiseTerms?.whiteNoise
            && noiseTerms?.pinkNoise == other.noiseTerms?.pinkNoise
            && noiseTerms?.backgroundNoise == other.noiseTerms?.backgroundNoise
            && noiseTerms?.backgroundNoiseOffset == other.noiseTerms?.backgroundNoiseOffset
            && conditions == other.conditions
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(emitter)
        hasher.combine(signalIdentifier)
        hasher.combine(nanosecondsSinceStart)
        hasher.combine(normalizedReflectance)
        return hasher.finalize()
    }

    public override var description: String {
        "SRPhotoplethysmogramOpticalSample(emitter: \(emitter), signal: \(signalIdentifier), "
            + "+\(nanosecondsSinceStart) ns, reflectance: \(normalizedReflectance.map { "\($0)" } ?? "nil"))"
    }
}

/// One reading of the accelerometer inside a PPG sensor (Apple's
/// `SRPhotoplethysmogramAccelerometerSample`), for motion artefact rejection.
public final class SRPhotoplethysmogramAccelerometerSample: NSObject, Sendable {
    /// Nanoseconds after the parent `SRPhotoplethysmogramSample.startDate`.
    public let nanosecondsSinceStart: Int64
    /// Held in hertz.
    public let samplingFrequency: Measurement<UnitFrequency>
    /// Acceleration along each axis, held in g (`UnitAcceleration.gravity`), as Apple's "in G's".
    /// Build these in `.gravity` from the wearable's (milli-)g: Foundation defines `.gravity` as
    /// 9.81 m/s², not standard gravity (9.80665), so a detour through m/s² is 0.035 % off.
    public let x: Measurement<UnitAcceleration>
    public let y: Measurement<UnitAcceleration>
    public let z: Measurement<UnitAcceleration>

    public init(
        nanosecondsSinceStart: Int64, samplingFrequency: Measurement<UnitFrequency>,
        x: Measurement<UnitAcceleration>, y: Measurement<UnitAcceleration>, z: Measurement<UnitAcceleration>
    ) {
        self.nanosecondsSinceStart = nanosecondsSinceStart
        self.samplingFrequency = samplingFrequency.expressed(in: .hertz)
        self.x = x.expressed(in: .gravity)
        self.y = y.expressed(in: .gravity)
        self.z = z.expressed(in: .gravity)
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SRPhotoplethysmogramAccelerometerSample else { return false }
        return nanosecondsSinceStart == other.nanosecondsSinceStart && samplingFrequency == other.samplingFrequency
            && x == other.x && y == other.y && z == other.z
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(nanosecondsSinceStart)
        hasher.combine(x.value)
        hasher.combine(y.value)
        hasher.combine(z.value)
        return hasher.finalize()
    }
}

/// A PPG reading: all optical channels and accelerometer values of one moment (Apple's
/// `SRPhotoplethysmogramSample`); SensorKit's `photoplethysmogram` sensor delivers these in
/// arrays: `result.sample as? [SRPhotoplethysmogramSample]`.
///
/// On Linux: one sample instant of a Polar PMD PPG frame, its device time mapped onto the host
/// clock (docs/ble.md §3).
public final class SRPhotoplethysmogramSample: NSObject, Sendable {
    /// Apple's `SRPhotoplethysmogramSampleUsage` (an `NSString` typed enum): why the reading was
    /// taken; several may apply at once.
    ///
    /// Apple does not publish the strings behind the constants; sensorkitd uses the constant names
    /// as raw values. Compare with the constants, never with literals.
    public struct Usage: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// A heart-rate reading a person takes in an app (Heart Rate, a workout).
        public static let foregroundHeartRate = Usage(rawValue: "SRPhotoplethysmogramSampleUsageForegroundHeartRate")
        /// A reading taken during a deep-breathing session (Mindfulness).
        public static let deepBreathing = Usage(rawValue: "SRPhotoplethysmogramSampleUsageDeepBreathing")
        /// A blood-oxygen reading a person takes in an app.
        public static let foregroundBloodOxygen = Usage(
            rawValue: "SRPhotoplethysmogramSampleUsageForegroundBloodOxygen")
        /// A reading the system takes by itself in the background.
        public static let backgroundSystem = Usage(rawValue: "SRPhotoplethysmogramSampleUsageBackgroundSystem")
    }

    /// The start of the data-collection session.
    public let startDate: Date
    /// Nanoseconds from `startDate` to this sample.
    public let nanosecondsSinceStart: Int64
    public let usage: [Usage]
    public let opticalSamples: [SRPhotoplethysmogramOpticalSample]
    public let accelerometerSamples: [SRPhotoplethysmogramAccelerometerSample]
    /// The PPG sensor's temperature, held in degrees Celsius; nil when invalid or unsupported.
    public let temperature: Measurement<UnitTemperature>?

    public init(
        startDate: Date, nanosecondsSinceStart: Int64, usage: [Usage],
        opticalSamples: [SRPhotoplethysmogramOpticalSample],
        accelerometerSamples: [SRPhotoplethysmogramAccelerometerSample] = [],
        temperature: Measurement<UnitTemperature>? = nil
    ) {
        self.startDate = startDate
        self.nanosecondsSinceStart = nanosecondsSinceStart
        self.usage = usage
        self.opticalSamples = opticalSamples
        self.accelerometerSamples = accelerometerSamples
        self.temperature = temperature.map { $0.expressed(in: .celsius) }
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SRPhotoplethysmogramSample else { return false }
        return startDate == other.startDate && nanosecondsSinceStart == other.nanosecondsSinceStart
            && usage == other.usage && opticalSamples == other.opticalSamples
            && accelerometerSamples == other.accelerometerSamples && temperature == other.temperature
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(startDate)
        hasher.combine(nanosecondsSinceStart)
        hasher.combine(opticalSamples.count)
        return hasher.finalize()
    }

    public override var description: String {
        "SRPhotoplethysmogramSample(\(startDate) +\(nanosecondsSinceStart) ns, \(opticalSamples.count) optical, "
            + "\(accelerometerSamples.count) accelerometer, usage: \(usage.map(\.rawValue)))"
    }
}
