import Foundation
import Synchronization

/// A query for recorded samples (Apple's `SRFetchRequest`): the range `(from, to]` on one device.
///
/// `from` and `to` start as NaN, as Apple's `-init` leaves them; a fetch with either unset, or
/// with `to < from`, fails with `SRError.Code.fetchRequestInvalid`. `device` starts as the device
/// given by `SRFetchRequest.defaultDevice` (the SensorKit client sets it to `SRDevice.current`).
public final class SRFetchRequest: NSObject, @unchecked Sendable {
    // @unchecked: mutable like Apple's; a request is configured on one thread, then handed over.
    public var from: SRAbsoluteTime = SRAbsoluteTime(.nan)
    public var to: SRAbsoluteTime = SRAbsoluteTime(.nan)
    public var device: SRDevice

    public override init() {
        device = SRFetchRequest.defaultDevice()
        super.init()
    }

    private static let defaultDeviceProvider = Mutex<@Sendable () -> SRDevice>({
        SRDevice(
            identifier: SRDevice.hostIdentifier, name: "localhost", model: "", systemName: "Linux",
            systemVersion: "", productType: "")
    })

    /// The device a new request targets; the SensorKit module installs `SRDevice.current`.
    public static func defaultDevice() -> SRDevice { defaultDeviceProvider.withLock { $0 }() }

    /// Installs the supplier of `defaultDevice()`.
    public static func setDefaultDevice(_ provider: @escaping @Sendable () -> SRDevice) {
        defaultDeviceProvider.withLock { $0 = provider }
    }

    /// Why this request cannot run, or nil when it is valid.
    public var invalidity: String? {
        if from.rawValue.isNaN || to.rawValue.isNaN {
            return "the fetch request's from and to must both be set (they start unset, as NaN)"
        }
        if !from.rawValue.isFinite || !to.rawValue.isFinite {
            return "the fetch request's from and to must be finite"
        }
        if to.rawValue < from.rawValue {
            return "the fetch request's range is inverted: to (\(to.rawValue)) is before from (\(from.rawValue))"
        }
        return nil
    }
}
