import Foundation
import Glibc
import SensorKitModel
import SensorSystem

/// A study app as an administrator installs it: `apps.d/<bundle-id>/` holding the app's own
/// `Info.plist` and `*.entitlements` with Apple's keys, plus `Binding.plist`, the Linux binding that
/// says which Unix users (and optionally which executable) may act as the app, and which users may
/// answer its consent requests (docs/configuration.md).
public struct AppManifest: Hashable, Sendable {
    public struct UsageDetail: Hashable, Sendable {
        public var description: String?
        public var required: Bool
    }

    public var bundleID: String
    /// `NSSensorKitUsageDescription`: the study's purpose, shown on the consent sheet.
    public var purpose: String?
    /// `NSSensorKitPrivacyPolicyURL`.
    public var privacyPolicyURL: String?
    /// `NSSensorKitUsageDetail`, keyed by Apple's usage keys (`SRSensorUsageMotion`, …).
    public var usageDetails: [String: UsageDetail]
    /// Sensors the entitlement `com.apple.developer.sensorkit.reader.allow` lists.
    public var entitledSensors: Set<SRSensor>
    /// Unix users that may act as this app (names as written; numeric strings are uids).
    public var users: [String]
    /// Resolved uids of `users`.
    public var uids: Set<UInt32>
    /// If set, only this executable (`/proc/<pid>/exe`) may act as the app.
    public var executable: String?
    /// Uids that may answer this app's consent requests and see its consent and stakes
    /// (`Binding.plist` `Consenters`; root always may). Never the app's own connection.
    public var consenters: Set<UInt32>

    /// The usage detail that applies to a sensor (Apple groups accelerometer and gyroscope under
    /// `SRSensorUsageMotion`).
    public func usageDetail(for sensor: SRSensor) -> UsageDetail? {
        SensorCatalog.descriptor(for: sensor)?.usageDetailKey.flatMap { usageDetails[$0] }
    }

    public static let entitlementKey = "com.apple.developer.sensorkit.reader.allow"
    public static let bindingFile = "Binding.plist"

    /// The most the daemon reads of one manifest file; a larger one skips the app. Apple's own
    /// `Info.plist` files run to tens of KiB; the bound keeps an app's texts far below a reply frame.
    public static let maximumFileBytes = 256 << 10

    public enum LoadError: Error, Hashable, Sendable, CustomStringConvertible {
        case missingFile(String)
        case unreadable(String, reason: String)
        case invalid(String, reason: String)
        /// Another user could change the file or its folder, or it is too large.
        case refused(FileRefusal)

        public var description: String {
            switch self {
            case .missingFile(let path): return "\(path) is missing"
            case .unreadable(let path, let reason): return "\(path) cannot be read: \(reason)"
            case .invalid(let path, let reason): return "\(path): \(reason)"
            case .refused(let refusal): return "\(refusal)"
            }
        }
    }

    /// Loads `directory` (named after the bundle id). `resolveUser` maps a user name to a uid.
    /// The folder and each file must be owned by root or the daemon's user, writable by nobody
    /// else, and each file at most `maximumFileBytes` (docs/configuration.md).
    public static func load(directory: String, resolveUser: (String) -> UInt32?) throws(LoadError) -> AppManifest {
        do {
            try AdministeredFile.checkFolder(directory)
        } catch {
            throw .refused(error)
        }
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        guard let entitlementsName = files.sorted().first(where: { $0.hasSuffix(".entitlements") }) else {
            throw .missingFile(directory + "/<name>.entitlements")
        }
        return try parse(
            directory: directory,
            info: try bytes(at: directory + "/Info.plist"),
            entitlements: (entitlementsName, try bytes(at: directory + "/" + entitlementsName)),
            binding: try bytes(at: directory + "/" + bindingFile),
            resolveUser: resolveUser)
    }

    /// The manifest from its three files' bytes: pure, no I/O. `directory` names the app (its
    /// last component is the bundle id) and the files in error messages.
    public static func parse(
        directory: String, info infoBytes: [UInt8], entitlements: (name: String, bytes: [UInt8]),
        binding bindingBytes: [UInt8], resolveUser: (String) -> UInt32?
    ) throws(LoadError) -> AppManifest {
        let bundleID = (directory as NSString).lastPathComponent
        let info = try dictionary(infoBytes, path: directory + "/Info.plist")
        let entitlementsPath = directory + "/" + entitlements.name
        let entitlementsTable = try dictionary(entitlements.bytes, path: entitlementsPath)
        let binding = try dictionary(bindingBytes, path: directory + "/" + bindingFile)

        guard let allowed = entitlementsTable[entitlementKey] as? [String] else {
            throw .invalid(entitlementsPath, reason: "\(entitlementKey) must be an array of strings")
        }
        var details: [String: UsageDetail] = [:]
        if let raw = info["NSSensorKitUsageDetail"] {
            guard let table = raw as? [String: Any] else {
                throw .invalid(directory + "/Info.plist", reason: "NSSensorKitUsageDetail must be a dictionary")
            }
            for (key, value) in table {
                guard let entry = value as? [String: Any] else {
                    throw .invalid(directory + "/Info.plist", reason: "NSSensorKitUsageDetail.\(key) must be a dictionary")
                }
                details[key] = UsageDetail(
                    description: entry["Description"] as? String,
                    required: (entry["Required"] as? Bool) ?? false)
            }
        }
        guard let users = binding["Users"] as? [String], !users.isEmpty else {
            throw .invalid(directory + "/" + bindingFile, reason: "Users must be a non-empty array of user names or uids")
        }
        func resolve(_ names: [String]) throws(LoadError) -> Set<UInt32> {
            var uids = Set<UInt32>()
            for user in names {
                guard let uid = UInt32(user) ?? resolveUser(user) else {
                    throw .invalid(directory + "/" + bindingFile, reason: "no such user '\(user)'")
                }
                uids.insert(uid)
            }
            return uids
        }
        let uids = try resolve(users)
        guard binding["Consenters"] == nil || binding["Consenters"] is [String] else {
            throw .invalid(directory + "/" + bindingFile, reason: "Consenters must be an array of user names or uids")
        }
        let consenters = try resolve(binding["Consenters"] as? [String] ?? [])
        // A present Executable of the wrong type must not leave the app unpinned: fail closed.
        guard binding["Executable"] == nil || binding["Executable"] is String else {
            throw .invalid(directory + "/" + bindingFile, reason: "Executable must be a string (an absolute path)")
        }
        let executable = binding["Executable"] as? String
        if let executable, !executable.hasPrefix("/") {
            throw .invalid(directory + "/" + bindingFile, reason: "Executable must be an absolute path")
        }
        return AppManifest(
            bundleID: bundleID, purpose: info["NSSensorKitUsageDescription"] as? String,
            privacyPolicyURL: info["NSSensorKitPrivacyPolicyURL"] as? String, usageDetails: details,
            entitledSensors: SensorCatalog.sensors(allowedBy: allowed), users: users, uids: uids,
            executable: executable, consenters: consenters)
    }

    private static func bytes(at path: String) throws(LoadError) -> [UInt8] {
        do {
            return try AdministeredFile.read(path, limit: maximumFileBytes)
        } catch {
            if case .unreadable(let failure) = error, failure.errno == ENOENT { throw .missingFile(path) }
            throw .refused(error)
        }
    }

    private static func dictionary(_ bytes: [UInt8], path: String) throws(LoadError) -> [String: Any] {
        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: nil)
        } catch {
            throw .unreadable(path, reason: "not a property list (\(error.localizedDescription))")
        }
        guard let dictionary = object as? [String: Any] else {
            throw .invalid(path, reason: "the top level must be a dictionary")
        }
        return dictionary
    }
}
