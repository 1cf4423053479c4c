import Foundation

/// One fetched sample or batch (Apple's `SRFetchResult<SampleType>`).
///
/// `timestamp` is when the daemon wrote the sample to its store, as on iOS; high-rate samples carry
/// their own sensor times. For the batched sensors (accelerometer, rotation rate, pressure, ECG,
/// PPG) `sample` is an array (`[CMRecordedAccelerometerData]`, …), one batch per result.
public final class SRFetchResult<SampleType: AnyObject>: NSObject, @unchecked Sendable {
    // @unchecked: immutable after creation; samples are immutable classes.
    public let sample: SampleType
    public let timestamp: SRAbsoluteTime

    public init(sample: SampleType, timestamp: SRAbsoluteTime) {
        self.sample = sample
        self.timestamp = timestamp
    }
}
