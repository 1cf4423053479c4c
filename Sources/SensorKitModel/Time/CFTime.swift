import Foundation

// Core Foundation's time names, which Foundation on Linux does not export. Study code written for
// Apple's platforms uses them with SensorKit (`SRAbsoluteTime(CFAbsoluteTimeGetCurrent() - 86400)`).

/// Seconds relative to the CF epoch, 2001-01-01 00:00:00 UTC.
public typealias CFAbsoluteTime = Double
/// An interval in seconds.
public typealias CFTimeInterval = Double

/// The current wall-clock time in seconds since 2001-01-01 UTC (Foundation's
/// `Date().timeIntervalSinceReferenceDate`). It jumps when the wall clock is stepped.
public func CFAbsoluteTimeGetCurrent() -> CFAbsoluteTime {
    Date().timeIntervalSinceReferenceDate
}

/// Seconds between the Unix epoch and the CF epoch.
public let kCFAbsoluteTimeIntervalSince1970: CFTimeInterval = 978_307_200
