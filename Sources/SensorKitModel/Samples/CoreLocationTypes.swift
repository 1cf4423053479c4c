// CoreLocation's scalar type names, which SensorKit's `SRVisit` and CoreMotion's `CMOdometerData`
// use. CoreLocation does not exist on Linux; on Apple's platforms these are all `Double`.

/// A distance in metres.
public typealias CLLocationDistance = Double
/// An accuracy (uncertainty) in metres.
public typealias CLLocationAccuracy = Double
/// A speed in metres per second.
public typealias CLLocationSpeed = Double
/// The accuracy of a speed in metres per second.
public typealias CLLocationSpeedAccuracy = Double
