/// How the controller scans during a pass (HCI LE Set Scan Parameters): active, so scannable
/// wearables send their scan response (where most put their name), listening `window` out of every
/// `interval`, both in units of 0.625 ms within 0x0004…0x4000 (2.5 ms…10.24 s), window ≤ interval.
public struct HCIScanParameters: Equatable, Sendable {
    public var active: Bool
    public private(set) var intervalUnits: UInt16
    public private(set) var windowUnits: UInt16
    /// Duplicate filtering by the controller. Off by default: the first report of a device can be
    /// read and dropped by libbluetooth while it waits for the enable command's answer, and a
    /// filtering controller would not report that device again in the pass. `HCIScanCollector`
    /// collapses the repeats instead.
    public var filterDuplicates: Bool

    /// Defaults: listen all the time (10 ms of every 10 ms).
    public init(
        active: Bool = true, intervalMilliseconds: Double = 10, windowMilliseconds: Double = 10, filterDuplicates: Bool = false
    ) {
        self.active = active
        self.filterDuplicates = filterDuplicates
        intervalUnits = Self.units(intervalMilliseconds)
        windowUnits = min(Self.units(windowMilliseconds), intervalUnits)
    }

    static func units(_ milliseconds: Double) -> UInt16 {
        guard milliseconds.isFinite else { return 0x4000 }
        let units = (milliseconds / 0.625).rounded()
        return UInt16(min(max(units, 0x0004), 0x4000))
    }
}
