import Foundation

/// A fetched batch as a family's client side reads it: its columns by the family's `Wire`
/// cases, and the clock readings its samples' dates need.
public struct FamilyBatch<Key: FamilyColumn> {
    public let frame: SampleBatchFrame
    /// The sensor fetched (motion batches are the accelerometer's or the gyroscope's).
    public let sensor: SRSensor
    public let dates: SampleDates

    public init(frame: SampleBatchFrame, sensor: SRSensor, dates: SampleDates) {
        precondition(frame.columns.count == Key.allCases.count)
        self.frame = frame
        self.sensor = sensor
        self.dates = dates
    }

    public var count: Int { frame.count }
    public var indices: Range<Int> { 0..<frame.count }
    /// Sensor times (SR ns).
    public var times: [Int64] { frame.sensorTimes }
    public var ragged: [Double] { frame.ragged }
    public subscript(column: Key) -> [Double] { frame.columns[column.ordinal] }
}

/// The clock readings a batch's dates need, taken once per batch instead of per sample.
public struct SampleDates: Sendable {
    /// `CFAbsoluteTime − SRAbsoluteTime` now, in seconds (NaN if the boot is unknown).
    public let cfOffset: Double
    /// The current boot's anchor (SR ns), for CoreMotion's since-boot `timestamp`.
    public let anchor: Int64?

    public init(cfOffset: Double, anchor: Int64?) {
        self.cfOffset = cfOffset
        self.anchor = anchor
    }

    public init(timeline: Timeline, clock: any SystemClock) {
        self.init(
            cfOffset: timeline.cfOffsetNanoseconds(clock).map { Double($0) / 1e9 } ?? .nan,
            anchor: timeline.currentBoot.flatMap { timeline.anchors[$0] })
    }

    /// Wall-clock `Date` of an SR nanosecond, with the current offset (as Apple converts).
    @inline(__always) public func date(_ sr: Int64) -> Date {
        Date(timeIntervalSinceReferenceDate: SRAbsoluteTime(nanoseconds: sr).rawValue + cfOffset)
    }

    /// `CMLogItem.timestamp`: seconds since this boot (negative for samples of earlier boots).
    @inline(__always) public func uptime(_ sr: Int64) -> TimeInterval {
        guard let anchor else { return .nan }
        return Double(sr - anchor) / 1e9
    }
}

/// Where a family puts the results it builds from a batch (the client library's materializer):
/// one result per sample for single-sample sensors, one result holding an array for the batched
/// ones, as Apple delivers them.
public protocol FetchResultBuilder {
    /// One result per sample of the batch, timestamped with its sensor time; `make(i)` is called
    /// for i = 0, 1, … in order.
    mutating func each(_ make: (Int) -> AnyObject)
    /// One result holding `samples` as an array, timestamped with the batch's last sensor time.
    mutating func batch(_ samples: SampleList)
    /// One result per run of rows, timestamped with the run's last sensor time (rows that
    /// together make one sample, like a device-usage report's); `make` is called run by run in order.
    mutating func groups(_ runs: [Range<Int>], _ make: (Range<Int>) -> AnyObject)
}

extension FetchResultBuilder {
    /// One result holding `samples` as an array, timestamped with the batch's last sensor time.
    @inline(__always) public mutating func batch<Sample: AnyObject>(_ samples: [Sample]) { batch(SampleList(samples)) }
}

/// A typed array of sample objects with its element type erased, made where the type is known
/// (a family's code), so that reading an element later costs no generic metadata lookups.
public struct SampleList {
    /// The samples as the Swift array they were made in (`[CMRecordedAccelerometerData]`, …).
    public let value: Any
    public let count: Int
    /// Element i.
    public let element: (Int) -> AnyObject

    public init<Sample: AnyObject>(_ samples: [Sample]) {
        value = samples
        count = samples.count
        element = { samples[$0] }
    }
}
