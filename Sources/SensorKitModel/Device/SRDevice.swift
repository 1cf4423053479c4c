import Foundation

/// A device that records sensor data (Apple's `SRDevice`): this host, or a BLE wearable.
///
/// On Linux: `name` is the hostname (or the wearable's advertised name), `model` and
/// `productType` come from DMI or the device tree (or the Device Information Service),
/// `systemName` is "Linux" (or the wearable's), `systemVersion` the kernel release (or firmware).
/// `SRDevice.current` lives in the SensorKit client module, which reads the host.
public final class SRDevice: NSObject, Sendable {
    public let name: String
    public let model: String
    public let systemName: String
    public let systemVersion: String
    public let productType: String
    /// Stable identity inside sensorkitd ("host" for this machine, "ble:AA:BB:…" for a wearable).
    /// Not in Apple's API; fetches select devices by it.
    public let identifier: String

    public init(
        identifier: String, name: String, model: String, systemName: String, systemVersion: String,
        productType: String
    ) {
        self.identifier = identifier
        self.name = name
        self.model = model
        self.systemName = systemName
        self.systemVersion = systemVersion
        self.productType = productType
    }

    /// The identifier of the host device.
    public static let hostIdentifier = "host"

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SRDevice else { return false }
        return identifier == other.identifier && name == other.name && model == other.model
            && systemName == other.systemName && systemVersion == other.systemVersion
            && productType == other.productType
    }

    public override var hash: Int { identifier.hashValue }

    public override var description: String {
        "SRDevice(\(identifier): \(name), \(model), \(systemName) \(systemVersion), \(productType))"
    }
}
