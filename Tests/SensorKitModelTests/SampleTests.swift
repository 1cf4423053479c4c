import Foundation
import Testing

@testable import SensorKitModel

/// Pins every enum and option-set value to Apple's headers (docs/sensorkit-mapping.md), the units the sample
/// classes hold, and how samples travel through `SRFetchResult<AnyObject>` on Linux.
@Suite struct SampleTests {
    // MARK: Raw values against Apple's headers

    /// Checks a whole enum: each listed case has its raw value, and there are no other cases.
    private func expectCases<E: RawRepresentable & CaseIterable & Equatable>(
        _ expected: [(E, E.RawValue)], sourceLocation: SourceLocation = #_sourceLocation
    ) where E.RawValue: Equatable {
        #expect(E.allCases.count == expected.count, sourceLocation: sourceLocation)
        for (value, raw) in expected {
            #expect(value.rawValue == raw, "\(value)", sourceLocation: sourceLocation)
            #expect(E(rawValue: raw) == value, "\(raw)", sourceLocation: sourceLocation)
        }
    }

    @Test func ambientLightPlacementMatchesHeader() {
        expectCases([
            (SRAmbientLightSample.SensorPlacement.unknown, 0), (.frontTop, 1), (.frontBottom, 2), (.frontRight, 3),
            (.frontLeft, 4), (.frontTopRight, 5), (.frontTopLeft, 6), (.frontBottomRight, 7), (.frontBottomLeft, 8),
        ])
        #expect(SRAmbientLightSample.SensorPlacement(rawValue: 9) == nil)
    }

    @Test func heartAndWristEnumsMatchHeaders() {
        expectCases([
            (CMHighFrequencyHeartRateDataConfidence.low, 0), (.medium, 1), (.high, 2), (.highest, 3),
        ])
        expectCases([(SRWristDetection.WristLocation.left, 0), (.right, 1)])
        expectCases([(SRWristDetection.CrownOrientation.left, 0), (.right, 1)])
        #expect(SRWristTemperature.Condition.offWrist.rawValue == 1)
        #expect(SRWristTemperature.Condition.onCharger.rawValue == 2)
        #expect(SRWristTemperature.Condition.inMotion.rawValue == 4)
        #expect(SRWristTemperature.Condition(rawValue: 5) == [.offWrist, .inMotion])
    }

    @Test func electrocardiogramEnumsMatchHeader() {
        expectCases([(SRElectrocardiogramSample.Lead.rightArmMinusLeftArm, 1), (.leftArmMinusRightArm, 2)])
        expectCases([(SRElectrocardiogramSession.State.begin, 1), (.active, 2), (.end, 3)])
        expectCases([(SRElectrocardiogramSession.SessionGuidance.guided, 1), (.unguided, 2)])
        #expect(SRElectrocardiogramData.Flags.signalInvalid.rawValue == 1 << 0)
        #expect(SRElectrocardiogramData.Flags.crownTouched.rawValue == 1 << 1)
        #expect(SRElectrocardiogramData.Flags(rawValue: 0) == [])
        #expect(SRElectrocardiogramData.Flags(rawValue: 3) == [.signalInvalid, .crownTouched])
    }

    @Test func photoplethysmogramConstantsAreDistinctAndNamedAfterApplesConstants() {
        let usages: [SRPhotoplethysmogramSample.Usage] = [
            .foregroundHeartRate, .deepBreathing, .foregroundBloodOxygen, .backgroundSystem,
        ]
        #expect(
            usages.map(\.rawValue) == [
                "SRPhotoplethysmogramSampleUsageForegroundHeartRate", "SRPhotoplethysmogramSampleUsageDeepBreathing",
                "SRPhotoplethysmogramSampleUsageForegroundBloodOxygen", "SRPhotoplethysmogramSampleUsageBackgroundSystem",
            ])
        #expect(Set(usages).count == 4)
        #expect(SRPhotoplethysmogramSample.Usage(rawValue: usages[1].rawValue) == .deepBreathing)
        let conditions: [SRPhotoplethysmogramOpticalSample.Condition] = [.signalSaturation, .unreliableNoise]
        #expect(
            conditions.map(\.rawValue) == [
                "SRPhotoplethysmogramOpticalSampleConditionSignalSaturation",
                "SRPhotoplethysmogramOpticalSampleConditionUnreliableNoise",
            ])
    }

    @Test func deviceUsageCategoryKeysAreTheTwentyNineConstantNames() {
        let expected: Set<String> = [
            "Books", "Business", "Catalogs", "DeveloperTools", "Education", "Entertainment", "Finance",
            "FoodAndDrink", "Games", "GraphicsAndDesign", "HealthAndFitness", "Kids", "Lifestyle", "Medical",
            "Miscellaneous", "Music", "Navigation", "News", "Newsstand", "PhotoAndVideo", "Productivity",
            "Reference", "Shopping", "SocialNetworking", "Sports", "Stickers", "Travel", "Utilities", "Weather",
        ].reduce(into: []) { $0.insert("SRDeviceUsageCategory" + $1) }
        let keys = SRDeviceUsageReport.CategoryKey.allKnown
        #expect(keys.count == 29)
        #expect(Set(keys.map(\.rawValue)) == expected)
        #expect(SRDeviceUsageReport.CategoryKey.games.rawValue == "SRDeviceUsageCategoryGames")
        #expect(SRDeviceUsageReport.CategoryKey.photoAndVideo.rawValue == "SRDeviceUsageCategoryPhotoAndVideo")
        #expect(SRDeviceUsageReport.CategoryKey(rawValue: "SRDeviceUsageCategoryKids") == .kids)
    }

    @Test func usageReportEnumsMatchHeaders() {
        typealias Event = SRDeviceUsageReport.NotificationUsage.Event
        expectCases([
            (Event.unknown, 0), (.received, 1), (.defaultAction, 2), (.supplementaryAction, 3), (.clear, 4),
            (.notificationCenterClearAll, 5), (.removed, 6), (.hide, 7), (.longLook, 8), (.silence, 9),
            (.appLaunch, 10), (.expired, 11), (.bannerPulldown, 12), (.tapCoalesce, 13), (.deduped, 14),
            (.deviceActivated, 15), (.deviceUnlocked, 16),
        ])
        expectCases([
            (SRTextInputSession.SessionType.keyboard, 1), (.thirdPartyKeyboard, 2), (.pencil, 3), (.dictation, 4),
        ])
        expectCases([(SRMediaEvent.EventType.onScreen, 1), (.offScreen, 2)])
        expectCases([(SRVisit.LocationCategory.unknown, 0), (.home, 1), (.work, 2), (.school, 3), (.gym, 4)])
        expectCases([(CMOdometerOriginDevice.unknown, 0), (.local, 1), (.remote, 2)])
    }

    @Test func keyboardFaceAndSpeechEnumsMatchHeaders() {
        expectCases([
            (SRKeyboardMetrics.SentimentCategory.absolutist, 0), (.down, 1), (.death, 2), (.anxiety, 3),
            (.anger, 4), (.health, 5), (.positive, 6), (.sad, 7), (.lowEnergy, 8), (.confused, 9),
        ])
        #expect(SRFaceMetrics.Context.deviceUnlock.rawValue == 1)
        #expect(SRFaceMetrics.Context.messagingAppUsage.rawValue == 2)
        #expect(SRSpeechMetrics.SessionFlags.bypassVoiceProcessing.rawValue == 1)
        #expect(SRSpeechMetrics.SessionFlags(rawValue: 0) == [])
    }

    @Test func acousticSettingsEnumsMatchHeader() {
        typealias Accommodations = SRAcousticSettings.Accessibility.HeadphoneAccommodations
        expectCases([(SRAcousticSettings.SampleLifetime.eightDays, 1), (.untilUserDeletes, 2)])
        expectCases([
            (SRAcousticSettings.Accessibility.BackgroundSounds.Name.balancedNoise, 1), (.brightNoise, 2),
            (.darkNoise, 3), (.ocean, 4), (.rain, 5), (.stream, 6), (.night, 7), (.fire, 8), (.babble, 9),
            (.steam, 10), (.airplane, 11), (.boat, 12), (.bus, 13), (.train, 14), (.rainOnRoof, 15),
            (.quietNight, 16),
        ])
        expectCases([
            (Accommodations.MediaEnhanceTuning.none, 0), (.balancedTone, 1), (.vocalRange, 2), (.brightness, 3),
        ])
        expectCases([(Accommodations.MediaEnhanceBoosting.none, 0), (.slight, 1), (.moderate, 2), (.strong, 3)])
        expectCases([(Accommodations.MediaEnhanceApplication.none, 1), (.phone, 2), (.media, 3), (.phoneAndMedia, 4)])
    }

    // MARK: Units

    @Test func pressureIsHeldInKilopascalsAndCelsius() {
        let sample = CMRecordedPressureData(
            identifier: 7, pressure: Measurement(value: 1013.25, unit: .hectopascals),
            temperature: Measurement(value: 77, unit: .fahrenheit), startDate: Date(timeIntervalSince1970: 0),
            timestamp: 12.5)
        #expect(sample.pressure.unit == .kilopascals)
        #expect(abs(sample.pressure.value - 101.325) < 1e-9)
        #expect(sample.temperature.unit == .celsius)
        #expect(abs(sample.temperature.value - 25) < 1e-9)
        let direct = CMRecordedPressureData(
            identifier: 7, pressure: Measurement(value: 99.5, unit: .kilopascals),
            temperature: Measurement(value: 21, unit: .celsius), startDate: Date(timeIntervalSince1970: 0),
            timestamp: 12.5)
        #expect(direct.pressure.value == 99.5)
        #expect(direct.temperature.value == 21)
    }

    @Test func luxIsHeldInLux() {
        let sample = SRAmbientLightSample(
            placement: .frontTop, chromaticity: .init(x: 0.3127, y: 0.329),
            lux: Measurement(value: 2, unit: .lux))
        #expect(sample.lux.unit == .lux)
        #expect(sample.lux.value == 2)
        #expect(sample.chromaticity.x == Float32(0.3127))
        let zero = SRAmbientLightSample.Chromaticity()
        #expect(zero.x == 0 && zero.y == 0)
    }

    @Test func electrocardiogramAndPhotoplethysmogramUnits() {
        let value = SRElectrocardiogramData(flags: [], value: Measurement(value: 1.5, unit: .millivolts))
        #expect(value.value.unit == .microvolts)
        #expect(abs(value.value.value - 1500) < 1e-9)
        let session = SRElectrocardiogramSession(state: .begin, sessionGuidance: .unguided, identifier: "s1")
        let ecg = SRElectrocardiogramSample(
            date: Date(timeIntervalSince1970: 100), frequency: Measurement(value: 0.13, unit: .kilohertz),
            session: session, lead: .leftArmMinusRightArm, data: [value])
        #expect(ecg.frequency.unit == .hertz)
        #expect(abs(ecg.frequency.value - 130) < 1e-9)

        let optical = SRPhotoplethysmogramOpticalSample(
            emitter: 2, activePhotodiodeIndexes: IndexSet([0, 2]), signalIdentifier: 4,
            nominalWavelength: Measurement(value: 0.53, unit: .micrometers),
            effectiveWavelength: Measurement(value: 531, unit: .nanometers),
            samplingFrequency: Measurement(value: 135, unit: .hertz), nanosecondsSinceStart: 7_407_407,
            normalizedReflectance: nil)
        #expect(optical.nominalWavelength.unit == .nanometers)
        #expect(abs(optical.nominalWavelength.value - 530) < 1e-9)
        #expect(optical.activePhotodiodeIndexes.contains(2) && !optical.activePhotodiodeIndexes.contains(1))
        #expect(optical.noiseTerms == nil && optical.normalizedReflectance == nil && optical.conditions.isEmpty)

        let accel = SRPhotoplethysmogramAccelerometerSample(
            nanosecondsSinceStart: 0, samplingFrequency: Measurement(value: 52, unit: .hertz),
            x: Measurement(value: 19.62, unit: .metersPerSecondSquared),
            y: Measurement(value: 0, unit: .gravity), z: Measurement(value: -1, unit: .gravity))
        #expect(accel.x.unit == .gravity)
        // Foundation defines `.gravity` as 9.81 m/s² (not standard gravity 9.80665), on Linux as on
        // Apple's platforms; sources therefore build these in `.gravity` directly.
        #expect(abs(accel.x.value - 2) < 1e-12)
        #expect(accel.z.value == -1)
        let ppg = SRPhotoplethysmogramSample(
            startDate: Date(timeIntervalSince1970: 0), nanosecondsSinceStart: 0, usage: [.backgroundSystem],
            opticalSamples: [optical], accelerometerSamples: [accel],
            temperature: Measurement(value: 305.15, unit: .kelvin))
        #expect(ppg.temperature?.unit == .celsius)
        #expect(abs((ppg.temperature?.value ?? .nan) - 32) < 1e-9)
    }

    @Test func keyboardLengthsAreMillimetresAndAbsentCountsAreZero() {
        let metrics = SRKeyboardMetrics(
            duration: 900, keyboardIdentifier: "en_US", version: "1",
            width: Measurement(value: 6.5, unit: .centimeters), height: Measurement(value: 40, unit: .millimeters),
            counters: [.totalWords: 12, .totalTaps: 80],
            durationMetrics: [
                .touchDownUp: .init(distributionSampleValues: [Measurement(value: 0.08, unit: .seconds)])
            ],
            wordCounts: [.positive: 3], emojiCounts: [.sad: 1])
        #expect(metrics.width.unit == .millimeters && abs(metrics.width.value - 65) < 1e-9)
        #expect(metrics.totalWords == 12 && metrics.totalTaps == 80 && metrics.totalDeletes == 0)
        #expect(metrics.wordCount(for: .positive) == 3 && metrics.wordCount(for: .sad) == 0)
        #expect(metrics.emojiCount(for: .sad) == 1)
        #expect(metrics.touchDownUp.distributionSampleValues.map(\.value) == [0.08])
        #expect(metrics.touchDownDown.distributionSampleValues.isEmpty)
        #expect(metrics.upErrorDistance.distributionSampleValues.isEmpty)
        #expect(SRKeyboardMetrics.DurationMetric.allCases.count == 32)
        #expect(SRKeyboardMetrics.LengthMetric.allCases.count == 8)
        #expect(SRKeyboardMetrics.Counter.allCases.count == 19)
    }

    // MARK: Fetch results on Linux

    private func accelerometerBatch() -> [CMRecordedAccelerometerData] {
        (0..<3).map { i in
            CMRecordedAccelerometerData(
                identifier: 42, acceleration: CMAcceleration(x: 0, y: -1, z: Double(i) / 10),
                startDate: Date(timeIntervalSinceReferenceDate: 800_000_000 + Double(i) / 100),
                timestamp: 1_000 + Double(i) / 100)
        }
    }

    @Test func singleSampleCastsBackThroughAnyObjectResult() {
        let sample = SRAmbientLightSample(
            placement: .frontBottom, chromaticity: .init(), lux: Measurement(value: 321, unit: .lux))
        let result = SRFetchResult<AnyObject>(sample: sample, timestamp: SRAbsoluteTime(5))
        let light = result.sample as? SRAmbientLightSample
        #expect(light === sample)
        #expect(light?.lux.value == 321)
        #expect(result.sample as? CMRecordedAccelerometerData == nil)
    }

    @Test func swiftArrayBatchCastsBackOnLinux() throws {
        let batch = accelerometerBatch()
        let result = SRFetchResult<AnyObject>(sample: batch as AnyObject, timestamp: SRAbsoluteTime(5))
        let samples = try #require(result.sample as? [CMRecordedAccelerometerData])
        #expect(samples.count == 3)
        #expect(zip(samples, batch).allSatisfy { $0 === $1 })
        #expect(result.sample as? [CMRecordedRotationRateData] == nil)
        // Superclass views work too, as with Apple's NSArray.
        #expect((result.sample as? [CMLogItem])?.count == 3)
        #expect((result.sample as? NSArray)?.count == 3)
    }

    @Test func nsArrayBatchCastsBackOnLinux() throws {
        let batch = accelerometerBatch()
        let result = SRFetchResult<AnyObject>(sample: NSArray(array: batch), timestamp: SRAbsoluteTime(5))
        let samples = try #require(result.sample as? [CMRecordedAccelerometerData])
        #expect(samples.count == 3)
        #expect(zip(samples, batch).allSatisfy { $0 === $1 })
        #expect(result.sample as? [CMRecordedPressureData] == nil)
        #expect((result.sample as? [CMAccelerometerData])?.count == 3)
    }

    @Test func heterogeneousBatchDoesNotCastToOneSampleType() {
        let mixed: [AnyObject] = [accelerometerBatch()[0], SRMediaEvent(mediaIdentifier: "m", eventType: .onScreen)]
        let result = SRFetchResult<AnyObject>(sample: mixed as AnyObject, timestamp: SRAbsoluteTime(5))
        #expect(result.sample as? [CMRecordedAccelerometerData] == nil)
    }

    @Test func electrocardiogramBatchCastsBack() throws {
        let session = SRElectrocardiogramSession(state: .active, sessionGuidance: .unguided, identifier: "h10")
        let batch = [
            SRElectrocardiogramSample(
                date: Date(timeIntervalSince1970: 1), frequency: Measurement(value: 130, unit: .hertz),
                session: session, lead: .rightArmMinusLeftArm,
                data: [SRElectrocardiogramData(flags: [], value: Measurement(value: -120, unit: .microvolts))])
        ]
        let result = SRFetchResult<AnyObject>(sample: batch as AnyObject, timestamp: SRAbsoluteTime(1))
        let samples = try #require(result.sample as? [SRElectrocardiogramSample])
        #expect(samples.first?.data.first?.value.value == -120)
    }

    // MARK: Value semantics

    @Test func equalFieldsMeanEqualObjects() {
        let a = accelerometerBatch()[1]
        let b = accelerometerBatch()[1]
        #expect(a !== b)
        #expect(a == b)
        #expect(a.hash == b.hash)
        #expect(a != accelerometerBatch()[2])
        // Same fields, different class: not equal.
        let base = CMAccelerometerData(acceleration: a.acceleration, timestamp: a.timestamp)
        #expect(!a.isEqual(base) && !base.isEqual(a))

        let hr1 = CMHighFrequencyHeartRateData(
            heartRate: 61, confidence: .high, date: nil, timestamp: 9, rrIntervals: [0.98, 1.01])
        let hr2 = CMHighFrequencyHeartRateData(
            heartRate: 61, confidence: .high, date: nil, timestamp: 9, rrIntervals: [0.98, 1.01])
        let hr3 = CMHighFrequencyHeartRateData(heartRate: 61, confidence: .high, date: nil, timestamp: 9)
        #expect(hr1 == hr2 && hr1.hash == hr2.hash)
        #expect(hr1 != hr3)
        #expect(hr3.rrIntervals.isEmpty)

        let pressure1 = CMRecordedPressureData(
            identifier: 1, pressure: Measurement(value: 100_000, unit: .newtonsPerMetersSquared),
            temperature: Measurement(value: 20, unit: .celsius), startDate: Date(timeIntervalSince1970: 0),
            timestamp: 1)
        let pressure2 = CMRecordedPressureData(
            identifier: 1, pressure: Measurement(value: 100, unit: .kilopascals),
            temperature: Measurement(value: 20, unit: .celsius), startDate: Date(timeIntervalSince1970: 0),
            timestamp: 1)
        #expect(pressure1 == pressure2 && pressure1.hash == pressure2.hash)

        let wrist = SRWristDetection(
            onWrist: true, wristLocation: .left, crownOrientation: .right,
            onWristDate: Date(timeIntervalSince1970: 5))
        #expect(
            wrist
                == SRWristDetection(
                    onWrist: true, wristLocation: .left, crownOrientation: .right,
                    onWristDate: Date(timeIntervalSince1970: 5)))
        #expect(
            wrist
                != SRWristDetection(
                    onWrist: false, wristLocation: .left, crownOrientation: .right,
                    onWristDate: Date(timeIntervalSince1970: 5)))
        #expect(wrist.offWristDate == nil)
    }

    @Test func pedometerKeepsMissingValuesNil() {
        let steps = CMPedometerData(
            startDate: Date(timeIntervalSince1970: 0), endDate: Date(timeIntervalSince1970: 60), numberOfSteps: 93)
        #expect(steps.numberOfSteps.intValue == 93)
        #expect(steps.distance == nil && steps.currentCadence == nil && steps.floorsAscended == nil)
        #expect(
            steps
                == CMPedometerData(
                    startDate: Date(timeIntervalSince1970: 0), endDate: Date(timeIntervalSince1970: 60), numberOfSteps: 93))
    }
}
