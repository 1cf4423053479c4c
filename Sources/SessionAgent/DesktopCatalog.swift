import Foundation
import SensorKitModel
import SensorSystem
import Synchronization

/// Which category an app id belongs to, from its desktop entry in the XDG data folders
/// (`$XDG_DATA_HOME/applications`, then each of `$XDG_DATA_DIRS`'s): the entry named
/// `<app id>.desktop`, the first found winning, as the Desktop Entry Specification's ids do. An id
/// is looked up only if it is a codable desktop id (`DesktopIDCode`: no `/`, so no path leaves
/// the folders); answers are remembered, at most `maximumRemembered` of them.
public final class DesktopCatalog: Sendable {
    public static let maximumRemembered = 512
    public let folders: [String]
    private let remembered = Mutex<[String: SRDeviceUsageReport.CategoryKey]>([:])

    public init(folders: [String]) { self.folders = folders }

    /// The folders of this environment, in precedence order.
    public static func folders(environment: [String: String]) -> [String] {
        let home =
            environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? environment["HOME"].map { $0 + "/.local/share" }
        let shared = (environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share")
            .split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        return ([home].compactMap { $0 } + shared).map { $0 + "/applications" }
    }

    /// The app as a report names it.
    public func app(_ id: String?) -> UsageAppName {
        guard let id, DesktopIDCode.encode(id) != nil else { return UsageAppName(id: nil, category: .miscellaneous) }
        if let known = remembered.withLock({ $0[id] }) { return UsageAppName(id: id, category: known) }
        var category = SRDeviceUsageReport.CategoryKey.miscellaneous
        for folder in folders {
            guard let text = try? SystemFiles.read(folder + "/" + id + ".desktop", limit: DesktopEntry.maximumBytes) else {
                continue
            }
            if let categories = DesktopEntry.categories(Array(text.utf8)) { category = CategoryTable.key(categories) }
            break
        }
        remembered.withLock { table in
            if table.count >= Self.maximumRemembered { table.removeAll() }
            table[id] = category
        }
        return UsageAppName(id: id, category: category)
    }
}

/// A desktop id (nil: unnamed) and its category.
public struct UsageAppName: Sendable, Equatable {
    public let id: String?
    public let category: SRDeviceUsageReport.CategoryKey
}
