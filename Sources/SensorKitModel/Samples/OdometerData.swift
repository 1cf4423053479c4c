import Foundation

/// Which device measured odometer data (CoreMotion's `CMOdometerOriginDevice`, `NSInteger`).
public enum CMOdometerOriginDevice: Int, Sendable, CaseIterable {
    case unknown = 0
    case local = 1
    case remote = 2
}

/// Distance, speed and slope over an interval of a workout (CoreMotion's `CMOdometerData`), one
/// per fetch result of SensorKit's `odometer` sensor. No Linux source yet.
public final class CMOdometerData: NSObject, Sendable {
    public let startDate: Date
    public let endDate: Date
    /// Distance travelled since the previous sample, in metres.
    public let deltaDistance: CLLocationDistance
    public let deltaDistanceAccuracy: CLLocationAccuracy
    /// Instantaneous speed in metres per second.
    public let speed: CLLocationSpeed
    public let speedAccuracy: CLLocationSpeedAccuracy
    /// Change of altitude since the previous sample, in metres.
    public let deltaAltitude: CLLocationDistance
    public let verticalAccuracy: CLLocationAccuracy
    /// The time of the GPS fix the values came from.
    public let gpsDate: Date
    /// Slope toward the direction of travel in degrees; nil when invalid.
    public let slope: Double?
    /// Largest absolute slope in any direction, in degrees; nil when GPS accuracy is too low.
    public let maxAbsSlope: Double?
    public let originDevice: CMOdometerOriginDevice

    public init(
        startDate: Date, endDate: Date, deltaDistance: CLLocationDistance, deltaDistanceAccuracy: CLLocationAccuracy,
        speed: CLLocationSpeed, speedAccuracy: CLLocationSpeedAccuracy, deltaAltitude: CLLocationDistance,
        verticalAccuracy: CLLocationAccuracy, gpsDate: Date, slope: Double?, maxAbsSlope: Double?,
        originDevice: CMOdometerOriginDevice
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.deltaDistance = deltaDistance
        self.deltaDistanceAccuracy = deltaDistanceAccuracy
        self.speed = speed
        self.speedAccuracy = speedAccuracy
        self.deltaAltitude = deltaAltitude
        self.verticalAccuracy = verticalAccuracy
        self.gpsDate = gpsDate
        self.slope = slope
        self.maxAbsSlope = maxAbsSlope
        self.originDevice = originDevice
    }
}
