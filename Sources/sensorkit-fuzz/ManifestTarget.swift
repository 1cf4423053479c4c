import Foundation
import SensorDaemon

/// An app's manifest: Info.plist, the entitlements and the binding, split from the input at two
/// `\0\0` separators, parsed as the daemon parses the files it loads.
enum ManifestTarget {
    static func run(_ bytes: [UInt8]) {
        var parts: [[UInt8]] = []
        var rest = bytes[...]
        while parts.count < 2, let range = rest.firstRange(of: [0, 0]) {
            parts.append(Array(rest[..<range.lowerBound]))
            rest = rest[range.upperBound...]
        }
        parts.append(Array(rest))
        while parts.count < 3 { parts.append([]) }
        let manifest = try? AppManifest.parse(
            directory: "/etc/sensorkit/apps.d/org.example.fuzzed", info: parts[0],
            entitlements: (name: "App.entitlements", bytes: parts[1]),
            binding: parts[2], resolveUser: { $0 == "study" ? 1000 : nil })
        _ = manifest?.entitledSensors
    }
}
