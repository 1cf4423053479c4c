import SensorKitModel
import SensorSystem

extension SRDevice {
    private static let host = HostIdentity.read().device

    /// `+[SRDevice currentDevice]`: this Linux host (hostname, DMI/device-tree model, kernel release).
    public static var current: SRDevice {
        SensorKitEnvironment.installDefaults()  // new fetch requests target this device from now on
        return host
    }
}
