import Foundation

/// The hearing-related settings of the device (Apple's `SRAcousticSettings`, iOS 26), one per
/// fetch result of SensorKit's `acousticSettings` sensor. No Linux source yet. Names, nesting and
/// raw values follow Apple's header (`SRAcousticSettings.h`).
public final class SRAcousticSettings: NSObject, Sendable {
    /// How long headphone audio-exposure samples stay in HealthKit (`NSInteger`, from 1).
    public enum SampleLifetime: Int, Sendable, CaseIterable {
        case eightDays = 1
        case untilUserDeletes = 2
    }

    /// Music equaliser settings (Apple's `SRAcousticSettingsMusicEQ`).
    public final class MusicEQ: NSObject, Sendable {
        public let isSoundCheckEnabled: Bool
        /// Late Night Mode dynamically compresses system-level audio.
        public let isLateNightModeEnabled: Bool

        public init(isSoundCheckEnabled: Bool, isLateNightModeEnabled: Bool) {
            self.isSoundCheckEnabled = isSoundCheckEnabled
            self.isLateNightModeEnabled = isLateNightModeEnabled
        }
    }

    /// Audio accessibility settings (Apple's `SRAcousticSettingsAccessibility`).
    public final class Accessibility: NSObject, Sendable {
        /// Background sounds that mask environmental noise
        /// (Apple's `SRAcousticSettingsAccessibilityBackgroundSounds`).
        public final class BackgroundSounds: NSObject, Sendable {
            /// Apple's `SRAcousticSettingsAccessibilityBackgroundSoundsName` (`NSInteger`, from 1).
            public enum Name: Int, Sendable, CaseIterable {
                case balancedNoise = 1
                case brightNoise = 2
                case darkNoise = 3
                case ocean = 4
                case rain = 5
                case stream = 6
                case night = 7
                case fire = 8
                case babble = 9
                case steam = 10
                case airplane = 11
                case boat = 12
                case bus = 13
                case train = 14
                case rainOnRoof = 15
                case quietNight = 16
            }

            public let isEnabled: Bool
            public let soundName: Name
            /// Volume relative to the system volume, in percent.
            public let relativeVolume: Double
            public let isPlayWithMediaEnabled: Bool
            /// Volume while media plays, in percent.
            public let relativeVolumeWithMedia: Double
            public let isStopOnLockEnabled: Bool

            public init(
                isEnabled: Bool, soundName: Name, relativeVolume: Double, isPlayWithMediaEnabled: Bool,
                relativeVolumeWithMedia: Double, isStopOnLockEnabled: Bool
            ) {
                self.isEnabled = isEnabled
                self.soundName = soundName
                self.relativeVolume = relativeVolume
                self.isPlayWithMediaEnabled = isPlayWithMediaEnabled
                self.relativeVolumeWithMedia = relativeVolumeWithMedia
                self.isStopOnLockEnabled = isStopOnLockEnabled
            }
        }

        /// Headphone tuning for hearing (Apple's `SRAcousticSettingsAccessibilityHeadphoneAccommodations`).
        public final class HeadphoneAccommodations: NSObject, Sendable {
            /// Which frequency range to favour (`NSInteger`, from 0).
            public enum MediaEnhanceTuning: Int, Sendable, CaseIterable {
                case none = 0
                case balancedTone = 1
                case vocalRange = 2
                case brightness = 3
            }

            /// How strongly soft sounds are boosted (`NSInteger`, from 0).
            public enum MediaEnhanceBoosting: Int, Sendable, CaseIterable {
                case none = 0
                case slight = 1
                case moderate = 2
                case strong = 3
            }

            /// What the accommodations apply to (`NSInteger`, from 1).
            public enum MediaEnhanceApplication: Int, Sendable, CaseIterable {
                case none = 1
                case phone = 2
                case media = 3
                case phoneAndMedia = 4
            }

            public let isEnabled: Bool
            public let mediaEnhanceTuning: MediaEnhanceTuning
            public let mediaEnhanceBoosting: MediaEnhanceBoosting
            public let mediaEnhanceApplication: MediaEnhanceApplication

            public init(
                isEnabled: Bool, mediaEnhanceTuning: MediaEnhanceTuning, mediaEnhanceBoosting: MediaEnhanceBoosting,
                mediaEnhanceApplication: MediaEnhanceApplication
            ) {
                self.isEnabled = isEnabled
                self.mediaEnhanceTuning = mediaEnhanceTuning
                self.mediaEnhanceBoosting = mediaEnhanceBoosting
                self.mediaEnhanceApplication = mediaEnhanceApplication
            }
        }

        /// Balance between the left and right channels.
        public let leftRightBalance: Double
        public let isMonoAudioEnabled: Bool
        public let backgroundSounds: BackgroundSounds
        public let headphoneAccommodations: HeadphoneAccommodations

        public init(
            leftRightBalance: Double, isMonoAudioEnabled: Bool, backgroundSounds: BackgroundSounds,
            headphoneAccommodations: HeadphoneAccommodations
        ) {
            self.leftRightBalance = leftRightBalance
            self.isMonoAudioEnabled = isMonoAudioEnabled
            self.backgroundSounds = backgroundSounds
            self.headphoneAccommodations = headphoneAccommodations
        }
    }

    public let isEnvironmentalSoundMeasurementsEnabled: Bool
    public let audioExposureSampleLifetime: SampleLifetime
    /// Reduce Loud Audio: the decibel level headphone audio may not exceed; nil when disabled.
    public let headphoneSafetyAudioLevel: Double?
    public let musicEQSettings: MusicEQ
    public let accessibilitySettings: Accessibility

    public init(
        isEnvironmentalSoundMeasurementsEnabled: Bool, audioExposureSampleLifetime: SampleLifetime,
        headphoneSafetyAudioLevel: Double?, musicEQSettings: MusicEQ, accessibilitySettings: Accessibility
    ) {
        self.isEnvironmentalSoundMeasurementsEnabled = isEnvironmentalSoundMeasurementsEnabled
        self.audioExposureSampleLifetime = audioExposureSampleLifetime
        self.headphoneSafetyAudioLevel = headphoneSafetyAudioLevel
        self.musicEQSettings = musicEQSettings
        self.accessibilitySettings = accessibilitySettings
    }
}
