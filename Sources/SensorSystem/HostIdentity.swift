import Glibc
import SensorKitModel

/// Who this machine is, for `SRDevice.current` (docs/sensorkit-mapping.md): hostname, model and product type from
/// DMI (`/sys/class/dmi/id/`) or the device tree (`/proc/device-tree/`), kernel release.
/// Reads a handful of small files; may block briefly, so read once at start-up.
public struct HostIdentity: Hashable, Sendable {
    public var hostname: String
    public var model: String
    public var productType: String
    public var kernelRelease: String

    /// Reads the identity below the given roots (tests point them at a fixture tree).
    public static func read(sysRoot: String = "/sys", procRoot: String = "/proc") -> HostIdentity {
        let dmi = sysRoot + "/class/dmi/id/"
        func dmiValue(_ name: String) -> String? {
            guard let value = SystemFiles.readTrimmed(dmi + name), !value.isEmpty,
                !placeholders.contains(value.lowercased())
            else { return nil }
            return value
        }
        // On ARM boards the device tree names the machine; its strings end in NUL.
        let treeModel = SystemFiles.readTrimmed(procRoot + "/device-tree/model")
        let treeCompatible = SystemFiles.readTrimmed(procRoot + "/device-tree/compatible")?
            .split(separator: "\0").first.map(String.init)
        let hostname = SystemFiles.readTrimmed(procRoot + "/sys/kernel/hostname") ?? Self.gethostname()
        let model =
            [dmiValue("product_family"), dmiValue("product_name"), treeModel]
            .compactMap { $0 }.first ?? "Linux computer"
        let vendor = dmiValue("sys_vendor")
        let product = dmiValue("product_name")
        let productType = product.map { p in vendor.map { "\($0) \(p)" } ?? p } ?? treeCompatible ?? model
        let release = SystemFiles.readTrimmed(procRoot + "/sys/kernel/osrelease") ?? Self.unameRelease()
        return HostIdentity(hostname: hostname, model: model, productType: productType, kernelRelease: release)
    }

    /// DMI strings vendors leave unfilled.
    static let placeholders: Set<String> = [
        "to be filled by o.e.m.", "default string", "system product name", "not specified", "none", "",
    ]

    /// The host as a SensorKit device.
    public var device: SRDevice {
        SRDevice(
            identifier: SRDevice.hostIdentifier, name: hostname, model: model, systemName: "Linux",
            systemVersion: kernelRelease, productType: productType)
    }

    static func gethostname() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard Glibc.gethostname(&buffer, buffer.count) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func unameRelease() -> String {
        var name = utsname()
        uname(&name)
        return withUnsafeBytes(of: &name.release) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}
