import Foundation
import SensorKitModel

/// Turns a wire batch into SensorKit results: one result per sample for single-sample sensors,
/// one result holding an array for the batched ones (accelerometer, rotation rate, pressure, ECG,
/// PPG), as Apple delivers them. `SRFetchResult.timestamp` is the sample's SR time (for a batch,
/// its last sample's), so `(last timestamp, …]` continues a fetch exactly where it stopped.
struct SampleMaterializer {
    let sensor: SRSensor
    let timeline: Timeline
    let clock: any SystemClock

    /// The clock readings a batch's conversions need, taken once per batch instead of per sample.
    private struct Conversion {
        /// `CFAbsoluteTime − SRAbsoluteTime` now, in seconds (NaN if the boot is unknown).
        let cfOffset: Double
        /// The current boot's anchor (SR ns), for CoreMotion's since-boot `timestamp`.
        let anchor: Int64?

        /// Wall-clock `Date` of an SR nanosecond, with the current offset (as Apple converts).
        @inline(__always) func date(_ sr: Int64) -> Date {
            Date(timeIntervalSinceReferenceDate: SRAbsoluteTime(nanoseconds: sr).rawValue + cfOffset)
        }

        /// `CMLogItem.timestamp`: seconds since this boot (negative for samples of earlier boots).
        @inline(__always) func uptime(_ sr: Int64) -> TimeInterval {
            guard let anchor else { return .nan }
            return Double(sr - anchor) / 1e9
        }
    }

    private func conversion() -> Conversion {
        Conversion(cfOffset: timeline.cfOffsetNanoseconds(clock).map { Double($0) / 1e9 } ?? .nan,
                   anchor: timeline.currentBoot.flatMap { timeline.anchors[$0] })
    }

    func results(_ batch: SampleBatchFrame) -> [SRFetchResult<AnyObject>] {
        guard batch.count > 0 else { return [] }
        let t = batch.sensorTimes
        let c = batch.columns
        let indices = 0..<batch.count
        let batchID = UInt64(bitPattern: t[0])
        let conversion = conversion()
        func single(_ make: (Int) -> AnyObject) -> [SRFetchResult<AnyObject>] {
            indices.map { SRFetchResult(sample: make($0), timestamp: SRAbsoluteTime(nanoseconds: t[$0])) }
        }
        // An NSArray, as Apple delivers, over the typed Swift array: no per-sample bridging
        // either way (SampleArray).
        func array<Sample: AnyObject>(_ samples: [Sample]) -> [SRFetchResult<AnyObject>] {
            [SRFetchResult(sample: SampleArray(samples: samples), timestamp: SRAbsoluteTime(nanoseconds: t[batch.count - 1]))]
        }
        switch batch.layout {
        case .motion where sensor == .rotationRate:
            let (x, y, z) = (c[0], c[1], c[2])
            return array(indices.map {
                CMRecordedRotationRateData(rotationRate: CMRotationRate(x: x[$0], y: y[$0], z: z[$0]),
                                           startDate: conversion.date(t[$0]), timestamp: conversion.uptime(t[$0]))
            })
        case .motion:
            let (x, y, z) = (c[0], c[1], c[2])
            return array(indices.map {
                CMRecordedAccelerometerData(identifier: batchID, acceleration: CMAcceleration(x: x[$0], y: y[$0], z: z[$0]),
                                            startDate: conversion.date(t[$0]), timestamp: conversion.uptime(t[$0]))
            })
        case .pressure:
            return array(indices.map {
                CMRecordedPressureData(identifier: batchID, pressure: Measurement(value: c[0][$0], unit: .kilopascals),
                                       temperature: Measurement(value: c[1][$0], unit: .celsius),
                                       startDate: conversion.date(t[$0]), timestamp: conversion.uptime(t[$0]))
            })
        case .ambientLight:
            return single {
                SRAmbientLightSample(placement: SRAmbientLightSample.SensorPlacement(rawValue: Int(c[3][$0])) ?? .unknown,
                                     chromaticity: .init(x: Float32(c[1][$0]), y: Float32(c[2][$0])),
                                     lux: Measurement(value: c[0][$0], unit: .lux))
            }
        case .pedometer:
            return single {
                CMPedometerData(startDate: conversion.date(t[$0]), endDate: conversion.date(Int64(c[0][$0])),
                                numberOfSteps: NSNumber(value: Int(c[1][$0])))
            }
        case .heartRate:
            var offset = 0
            return single { i in
                let count = Int(c[2][i])
                let rr = Array(batch.ragged[min(offset, batch.ragged.count)..<min(offset + count, batch.ragged.count)])
                offset += count
                return CMHighFrequencyHeartRateData(
                    heartRate: c[0][i], confidence: CMHighFrequencyHeartRateDataConfidence(rawValue: Int(c[1][i])) ?? .low,
                    date: conversion.date(t[i]), timestamp: conversion.uptime(t[i]), rrIntervals: rr)
            }
        case .wrist:
            return single {
                let onWrist = c[0][$0] != 0
                return SRWristDetection(onWrist: onWrist,
                                        wristLocation: SRWristDetection.WristLocation(rawValue: Int(c[1][$0])) ?? .left,
                                        crownOrientation: SRWristDetection.CrownOrientation(rawValue: Int(c[2][$0])) ?? .right,
                                        onWristDate: onWrist ? conversion.date(t[$0]) : nil, offWristDate: onWrist ? nil : conversion.date(t[$0]))
            }
        case .electrocardiogram:
            let first = 0
            let session = SRElectrocardiogramSession(state: .active, sessionGuidance: .unguided,
                                                     identifier: String(Int64(c[4][first])))
            let sample = SRElectrocardiogramSample(
                date: conversion.date(t[first]), frequency: Measurement(value: c[3][first], unit: .hertz), session: session,
                lead: SRElectrocardiogramSample.Lead(rawValue: Int(c[1][first])) ?? .leftArmMinusRightArm,
                data: indices.map {
                    SRElectrocardiogramData(flags: .init(rawValue: UInt(c[2][$0])),
                                            value: Measurement(value: c[0][$0], unit: .microvolts))
                })
            return array([sample])
        case .photoplethysmogram:
            let start = t[0]
            return array(indices.map { i in
                SRPhotoplethysmogramSample(
                    startDate: conversion.date(start), nanosecondsSinceStart: t[i] - start, usage: [],
                    opticalSamples: (0..<5).map { channel in
                        SRPhotoplethysmogramOpticalSample(
                            emitter: channel, activePhotodiodeIndexes: IndexSet(integer: 0), signalIdentifier: channel,
                            nominalWavelength: Measurement(value: 0, unit: .nanometers),
                            effectiveWavelength: Measurement(value: 0, unit: .nanometers),
                            samplingFrequency: Measurement(value: 0, unit: .hertz), nanosecondsSinceStart: t[i] - start,
                            normalizedReflectance: c[channel][i])
                    },
                    accelerometerSamples: [], temperature: nil)
            })
        case .deletionRecords:
            return single {
                SRDeletionRecord(startTime: SRAbsoluteTime(nanoseconds: t[$0]), endTime: SRAbsoluteTime(nanoseconds: Int64(c[0][$0])),
                                 reason: SRDeletionReason(rawValue: Int(c[1][$0])) ?? .systemInitiated)
            }
        }
    }
}
