import Foundation

/// CoreMotion's `CMLogItem`: the base of every CoreMotion sample SensorKit returns
/// (`CMRecordedAccelerometerData`, `CMRecordedRotationRateData`, `CMRecordedPressureData`,
/// `CMHighFrequencyHeartRateData`), kept as a class so `sample as? CMLogItem` and extensions on it
/// compile as they do on Apple's platforms.
///
/// `timestamp` is seconds since the device booted, as Apple documents. On Linux that is
/// `CLOCK_BOOTTIME` (which, like Apple's clock, keeps counting across suspend) of the boot the
/// sample was recorded in; compare timestamps only within one boot.
public class CMLogItem: NSObject, @unchecked Sendable {
    // @unchecked: immutable (every stored property in the hierarchy is a `let` of a Sendable type);
    // Swift accepts checked Sendable only on final classes, and this one has CoreMotion subclasses.
    public let timestamp: TimeInterval

    public init(timestamp: TimeInterval) {
        self.timestamp = timestamp
    }

    /// Equal when the other object is of exactly the same class and every field is equal;
    /// subclasses extend this with their own fields.
    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CMLogItem,
            ObjectIdentifier(type(of: other)) == ObjectIdentifier(type(of: self))
        else { return false }
        return timestamp == other.timestamp
    }

    public override var hash: Int { timestamp.hashValue }
}
