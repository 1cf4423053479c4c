import SensorKitModel

/// How raw counts of one channel become its ABI unit (m/s², rad/s, lux, kPa, milli-°C):
/// `(raw + offset) × scale`, offset added before scaling (sysfs-bus-iio; docs/iio.md §12.2). A value
/// read from `_input` is already processed and must not go through this. Pure.
public struct ChannelCalibration: Hashable, Sendable {
    public var scale: Double
    public var offset: Double

    public init(scale: Double = 1, offset: Double = 0) {
        self.scale = scale
        self.offset = offset
    }

    public static let identity = ChannelCalibration()

    /// The processed value of `raw` counts.
    @inline(__always)
    public func value(raw: Int64) -> Double {
        UnitConversion.iioProcessed(raw: raw, offset: offset, scale: scale)
    }
}
