import Foundation

/// CoreMotion's `CMAcceleration` (a C struct on Apple's platforms): acceleration in g along each
/// axis of the device, in CoreMotion's orientation (upright portrait reads y ≈ −1 g, face up
/// z ≈ −1 g; see `UnitConversion.gravities(fromMetresPerSecondSquared:)`).
///
/// Like the imported C struct it is mutable and has `init()` and `init(x:y:z:)`; it is not
/// `Equatable`, so study code that adds that conformance itself still compiles.
public struct CMAcceleration: Sendable {
    public var x: Double
    public var y: Double
    public var z: Double

    public init() { self.init(x: 0, y: 0, z: 0) }

    public init(x: Double, y: Double, z: Double) {
        self.x = x
        self.y = y
        self.z = z
    }
}

/// CoreMotion's `CMRotationRate` (a C struct): rotation rate in rad/s about each device axis.
/// Not `Equatable`, for the same reason as `CMAcceleration`.
public struct CMRotationRate: Sendable {
    public var x: Double
    public var y: Double
    public var z: Double

    public init() { self.init(x: 0, y: 0, z: 0) }

    public init(x: Double, y: Double, z: Double) {
        self.x = x
        self.y = y
        self.z = z
    }
}

/// CoreMotion's `CMAccelerometerData`: one accelerometer reading.
public class CMAccelerometerData: CMLogItem, @unchecked Sendable {
    // @unchecked: immutable; see CMLogItem.
    /// Acceleration in g.
    public let acceleration: CMAcceleration

    public init(acceleration: CMAcceleration, timestamp: TimeInterval) {
        self.acceleration = acceleration
        super.init(timestamp: timestamp)
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard super.isEqual(object), let other = object as? CMAccelerometerData else { return false }
        return acceleration.x == other.acceleration.x && acceleration.y == other.acceleration.y
            && acceleration.z == other.acceleration.z
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(timestamp)
        hasher.combine(acceleration.x)
        hasher.combine(acceleration.y)
        hasher.combine(acceleration.z)
        return hasher.finalize()
    }
}

/// An accelerometer sample as SensorKit's `accelerometer` sensor returns it (Apple's
/// `CMRecordedAccelerometerData`), delivered in batches: `result.sample as? [CMRecordedAccelerometerData]`.
///
/// On Linux: IIO `in_accel_*` after the mount matrix, m/s² ÷ 9.80665 (docs/sensorkit-mapping.md).
public final class CMRecordedAccelerometerData: CMAccelerometerData, @unchecked Sendable {
    // @unchecked: immutable; see CMLogItem.
    /// The batch this sample was recorded in; every sample of one batch shares it.
    public let identifier: UInt64
    /// The wall-clock time when the sample was recorded.
    public let startDate: Date

    public init(
        identifier: UInt64, acceleration: CMAcceleration, startDate: Date, timestamp: TimeInterval
    ) {
        self.identifier = identifier
        self.startDate = startDate
        super.init(acceleration: acceleration, timestamp: timestamp)
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard super.isEqual(object), let other = object as? CMRecordedAccelerometerData else { return false }
        return identifier == other.identifier && startDate == other.startDate
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(super.hash)
        hasher.combine(identifier)
        hasher.combine(startDate)
        return hasher.finalize()
    }

    public override var description: String {
        "CMRecordedAccelerometerData(x: \(acceleration.x), y: \(acceleration.y), z: \(acceleration.z) g, "
            + "identifier: \(identifier), startDate: \(startDate), timestamp: \(timestamp))"
    }
}

/// CoreMotion's `CMRotationRateData`: one gyroscope reading.
public class CMRotationRateData: CMLogItem, @unchecked Sendable {
    // @unchecked: immutable; see CMLogItem.
    /// Rotation rate in rad/s.
    public let rotationRate: CMRotationRate

    public init(rotationRate: CMRotationRate, timestamp: TimeInterval) {
        self.rotationRate = rotationRate
        super.init(timestamp: timestamp)
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard super.isEqual(object), let other = object as? CMRotationRateData else { return false }
        return rotationRate.x == other.rotationRate.x && rotationRate.y == other.rotationRate.y
            && rotationRate.z == other.rotationRate.z
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(timestamp)
        hasher.combine(rotationRate.x)
        hasher.combine(rotationRate.y)
        hasher.combine(rotationRate.z)
        return hasher.finalize()
    }
}

/// A gyroscope sample as SensorKit's `rotationRate` sensor returns it (Apple's
/// `CMRecordedRotationRateData`), in batches: `result.sample as? [CMRecordedRotationRateData]`.
/// Apple's class has no batch `identifier`, so neither does this one.
///
/// On Linux: IIO `in_anglvel_*` (already rad/s) after the mount matrix.
public final class CMRecordedRotationRateData: CMRotationRateData, @unchecked Sendable {
    // @unchecked: immutable; see CMLogItem.
    /// The wall-clock time at which the rotation rate was observed.
    public let startDate: Date

    public init(rotationRate: CMRotationRate, startDate: Date, timestamp: TimeInterval) {
        self.startDate = startDate
        super.init(rotationRate: rotationRate, timestamp: timestamp)
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard super.isEqual(object), let other = object as? CMRecordedRotationRateData else { return false }
        return startDate == other.startDate
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(super.hash)
        hasher.combine(startDate)
        return hasher.finalize()
    }

    public override var description: String {
        "CMRecordedRotationRateData(x: \(rotationRate.x), y: \(rotationRate.y), z: \(rotationRate.z) rad/s, "
            + "startDate: \(startDate), timestamp: \(timestamp))"
    }
}
