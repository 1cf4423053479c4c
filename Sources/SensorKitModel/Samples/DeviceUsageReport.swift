import Foundation

/// How the device, its apps and websites were used over a period (Apple's `SRDeviceUsageReport`),
/// one per fetch result of SensorKit's `deviceUsageReport` sensor. No Linux source yet: the type
/// exists so study code compiles, and fetching it fails with a specific error.
public final class SRDeviceUsageReport: NSObject, Sendable {
    /// An App Store category (Apple's `SRDeviceUsageCategoryKey`, an `NSString` typed enum).
    /// Each raw value is the name of its constant (`"SRDeviceUsageCategoryGames"`), as observed
    /// on iOS (docs/sensorkit-mapping.md).
    public struct CategoryKey: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let games = CategoryKey(rawValue: "SRDeviceUsageCategoryGames")
        public static let business = CategoryKey(rawValue: "SRDeviceUsageCategoryBusiness")
        public static let weather = CategoryKey(rawValue: "SRDeviceUsageCategoryWeather")
        public static let utilities = CategoryKey(rawValue: "SRDeviceUsageCategoryUtilities")
        public static let travel = CategoryKey(rawValue: "SRDeviceUsageCategoryTravel")
        public static let sports = CategoryKey(rawValue: "SRDeviceUsageCategorySports")
        public static let socialNetworking = CategoryKey(rawValue: "SRDeviceUsageCategorySocialNetworking")
        public static let reference = CategoryKey(rawValue: "SRDeviceUsageCategoryReference")
        public static let productivity = CategoryKey(rawValue: "SRDeviceUsageCategoryProductivity")
        public static let photoAndVideo = CategoryKey(rawValue: "SRDeviceUsageCategoryPhotoAndVideo")
        public static let news = CategoryKey(rawValue: "SRDeviceUsageCategoryNews")
        public static let navigation = CategoryKey(rawValue: "SRDeviceUsageCategoryNavigation")
        public static let music = CategoryKey(rawValue: "SRDeviceUsageCategoryMusic")
        public static let lifestyle = CategoryKey(rawValue: "SRDeviceUsageCategoryLifestyle")
        public static let healthAndFitness = CategoryKey(rawValue: "SRDeviceUsageCategoryHealthAndFitness")
        public static let finance = CategoryKey(rawValue: "SRDeviceUsageCategoryFinance")
        public static let entertainment = CategoryKey(rawValue: "SRDeviceUsageCategoryEntertainment")
        public static let education = CategoryKey(rawValue: "SRDeviceUsageCategoryEducation")
        public static let books = CategoryKey(rawValue: "SRDeviceUsageCategoryBooks")
        public static let medical = CategoryKey(rawValue: "SRDeviceUsageCategoryMedical")
        public static let newsstand = CategoryKey(rawValue: "SRDeviceUsageCategoryNewsstand")
        public static let catalogs = CategoryKey(rawValue: "SRDeviceUsageCategoryCatalogs")
        public static let kids = CategoryKey(rawValue: "SRDeviceUsageCategoryKids")
        public static let miscellaneous = CategoryKey(rawValue: "SRDeviceUsageCategoryMiscellaneous")
        public static let foodAndDrink = CategoryKey(rawValue: "SRDeviceUsageCategoryFoodAndDrink")
        public static let developerTools = CategoryKey(rawValue: "SRDeviceUsageCategoryDeveloperTools")
        public static let graphicsAndDesign = CategoryKey(rawValue: "SRDeviceUsageCategoryGraphicsAndDesign")
        public static let shopping = CategoryKey(rawValue: "SRDeviceUsageCategoryShopping")
        public static let stickers = CategoryKey(rawValue: "SRDeviceUsageCategoryStickers")

        /// **sensorkitd addition.** All 29 categories, in the order of Apple's header.
        public static let allKnown: [CategoryKey] = [
            games, business, weather, utilities, travel, sports, socialNetworking, reference, productivity,
            photoAndVideo, news, navigation, music, lifestyle, healthAndFitness, finance, entertainment,
            education, books, medical, newsstand, catalogs, kids, miscellaneous, foodAndDrink, developerTools,
            graphicsAndDesign, shopping, stickers,
        ]
    }

    /// Time spent in one app (Apple's `SRApplicationUsage`).
    public final class ApplicationUsage: NSObject, Sendable {
        /// Nil for apps the report does not name.
        public let bundleIdentifier: String?
        public let usageTime: TimeInterval
        /// An identifier of the app that is stable within one study app's reports.
        public let reportApplicationIdentifier: String
        public let textInputSessions: [SRTextInputSession]
        public let supplementalCategories: [SRSupplementalCategory]
        /// Seconds from the start of the report to the first use of the app in it.
        public let relativeStartTime: TimeInterval

        public init(
            bundleIdentifier: String?, usageTime: TimeInterval, reportApplicationIdentifier: String,
            textInputSessions: [SRTextInputSession] = [], supplementalCategories: [SRSupplementalCategory] = [],
            relativeStartTime: TimeInterval = 0
        ) {
            self.bundleIdentifier = bundleIdentifier
            self.usageTime = usageTime
            self.reportApplicationIdentifier = reportApplicationIdentifier
            self.textInputSessions = textInputSessions
            self.supplementalCategories = supplementalCategories
            self.relativeStartTime = relativeStartTime
        }
    }

    /// One notification event of one app (Apple's `SRNotificationUsage`).
    public final class NotificationUsage: NSObject, Sendable {
        /// Apple's `SRNotificationEvent` (`NSInteger`), values as in the header.
        public enum Event: Int, Sendable, CaseIterable {
            case unknown = 0
            case received = 1
            case defaultAction = 2
            case supplementaryAction = 3
            case clear = 4
            case notificationCenterClearAll = 5
            case removed = 6
            case hide = 7
            case longLook = 8
            case silence = 9
            case appLaunch = 10
            case expired = 11
            case bannerPulldown = 12
            case tapCoalesce = 13
            case deduped = 14
            case deviceActivated = 15
            case deviceUnlocked = 16
        }

        public let bundleIdentifier: String?
        public let event: Event

        public init(bundleIdentifier: String?, event: Event) {
            self.bundleIdentifier = bundleIdentifier
            self.event = event
        }
    }

    /// Time spent on websites of one category (Apple's `SRWebUsage`).
    public final class WebUsage: NSObject, Sendable {
        public let totalUsageTime: TimeInterval

        public init(totalUsageTime: TimeInterval) {
            self.totalUsageTime = totalUsageTime
        }
    }

    /// The period the report covers, in seconds.
    public let duration: TimeInterval
    public let applicationUsageByCategory: [CategoryKey: [ApplicationUsage]]
    public let notificationUsageByCategory: [CategoryKey: [NotificationUsage]]
    public let webUsageByCategory: [CategoryKey: [WebUsage]]
    public let totalScreenWakes: Int
    public let totalUnlocks: Int
    public let totalUnlockDuration: TimeInterval
    /// The version of the algorithm that produced the report.
    public let version: String

    public init(
        duration: TimeInterval, applicationUsageByCategory: [CategoryKey: [ApplicationUsage]] = [:],
        notificationUsageByCategory: [CategoryKey: [NotificationUsage]] = [:],
        webUsageByCategory: [CategoryKey: [WebUsage]] = [:], totalScreenWakes: Int = 0, totalUnlocks: Int = 0,
        totalUnlockDuration: TimeInterval = 0, version: String = ""
    ) {
        self.duration = duration
        self.applicationUsageByCategory = applicationUsageByCategory
        self.notificationUsageByCategory = notificationUsageByCategory
        self.webUsageByCategory = webUsageByCategory
        self.totalScreenWakes = totalScreenWakes
        self.totalUnlocks = totalUnlocks
        self.totalUnlockDuration = totalUnlockDuration
        self.version = version
    }
}

/// A stretch of text entry inside an app (Apple's `SRTextInputSession`, iOS 15).
public final class SRTextInputSession: NSObject, Sendable {
    /// Apple's `SRTextInputSessionType` (`NSInteger`), starting at 1.
    public enum SessionType: Int, Sendable, CaseIterable {
        case keyboard = 1
        case thirdPartyKeyboard = 2
        case pencil = 3
        case dictation = 4
    }

    public let duration: TimeInterval
    public let sessionType: SessionType
    /// Correlates this session with keyboard metrics of the same session.
    public let sessionIdentifier: String

    public init(duration: TimeInterval, sessionType: SessionType, sessionIdentifier: String) {
        self.duration = duration
        self.sessionType = sessionType
        self.sessionIdentifier = sessionIdentifier
    }
}

/// A finer category an app declares besides its App Store one (Apple's `SRSupplementalCategory`).
public final class SRSupplementalCategory: NSObject, Sendable {
    public let identifier: String

    public init(identifier: String) {
        self.identifier = identifier
    }
}
