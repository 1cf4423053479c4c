import Foundation
import SensorKitModel

/// Turns a wire batch into SensorKit results by the layout's sensor family (`SensorFamilies`):
/// one result per sample for single-sample sensors, one result holding an array for the batched
/// ones (accelerometer, rotation rate, pressure, ECG, PPG), as Apple delivers them.
/// `SRFetchResult.timestamp` is the sample's SR time (for a batch, its last sample's), so
/// `(last timestamp, …]` continues a fetch exactly where it stopped.
struct SampleMaterializer {
    let sensor: SRSensor
    let timeline: Timeline
    let clock: any SystemClock

    func results(_ batch: SampleBatchFrame) -> [SRFetchResult<AnyObject>] {
        var results = FetchResults(times: batch.sensorTimes)
        SensorFamilies.results(batch, sensor: sensor, dates: SampleDates(timeline: timeline, clock: clock), into: &results)
        return results.results
    }
}

/// The results a family builds, timestamped with the batch's sensor times.
private struct FetchResults: FetchResultBuilder {
    let times: [Int64]
    var results: [SRFetchResult<AnyObject>] = []

    mutating func each(_ make: (Int) -> AnyObject) {
        results = times.indices.map { SRFetchResult(sample: make($0), timestamp: SRAbsoluteTime(nanoseconds: times[$0])) }
    }

    mutating func groups(_ runs: [Range<Int>], _ make: (Range<Int>) -> AnyObject) {
        results = runs.map { SRFetchResult(sample: make($0), timestamp: SRAbsoluteTime(nanoseconds: times[$0.upperBound - 1])) }
    }

    // An NSArray, as Apple delivers, over the typed Swift array: no per-sample bridging either
    // way (SampleArray).
    mutating func batch(_ samples: SampleList) {
        results = [
            SRFetchResult(sample: SampleArray(samples: samples), timestamp: SRAbsoluteTime(nanoseconds: times[times.count - 1]))
        ]
    }
}
