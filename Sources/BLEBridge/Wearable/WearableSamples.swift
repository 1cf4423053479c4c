import SensorKitModel

/// What a wearable's streams store (docs/ble.md, "What is stored"): their descriptors and the
/// columns of a heart-rate measurement or a PMD frame. Used by the BLE driver and by the bench.
public enum WearableSamples {
    /// RR intervals kept per heart-rate measurement (`rr0`…`rr15`).
    public static let rrColumns = HeartRateFamily.rrLimit

    /// A stream's identity: the wearable's `SRDevice` fields (from its Device Information Service),
    /// how its samples are timed, and its columns under the layout's own names.
    public static func descriptor(
        _ sensor: SRSensor, device: SRDevice, wearable: String,
        location: BodySensorLocation?
    ) -> SourceDescriptor {
        var details: [String: String] = [
            "wearable": wearable, "deviceName": device.name, "deviceModel": device.model,
            "deviceSystemName": device.systemName, "deviceSystemVersion": device.systemVersion,
            "deviceProductType": device.productType,
        ]
        if let location { details["bodySensorLocation"] = location.description }
        let columns: [SourceColumn]
        switch sensor {
        case .heartRate:
            details["timing"] = "stamped on receipt: the Heart Rate Service carries no device time"
            columns =
                [
                    SourceColumn(name: HeartRateFamily.Stored.bpm.rawValue, unit: "count/min"),
                    SourceColumn(name: HeartRateFamily.Stored.confidence.rawValue, unit: ""),
                    SourceColumn(name: HeartRateFamily.Stored.rrCount.rawValue, unit: ""),
                ]
                + HeartRateFamily.Stored.rrSlots.map { SourceColumn(name: $0.rawValue, scale: 1.0 / 1024, unit: "s") }
        case .onWristState:
            details["timing"] = "stamped on receipt of the heart-rate measurement whose sensor contact changed"
            columns = WristFamily.Column.allCases.map { SourceColumn(name: $0.rawValue, unit: "") }
        case .electrocardiogram:
            details["timing"] =
                "device clock mapped to the boot clock (offset + drift from the lower envelope of frame arrivals); uncertainty in status"
            typealias ECG = ElectrocardiogramFamily.Column
            columns = [
                SourceColumn(name: ECG.microvolts.rawValue, unit: "µV"), SourceColumn(name: ECG.lead.rawValue, unit: ""),
                SourceColumn(name: ECG.flags.rawValue, unit: ""), SourceColumn(name: ECG.frequency.rawValue, unit: "Hz"),
                SourceColumn(name: ECG.sessionStart.rawValue, unit: "ns"),
            ]
        default:
            details["timing"] =
                "device clock mapped to the boot clock (offset + drift from the lower envelope of frame arrivals); uncertainty in status"
            typealias PPG = PhotoplethysmogramFamily.Column
            columns = [PPG.ppg0, .ppg1, .ppg2, .ambient].map { SourceColumn(name: $0.rawValue, unit: "count") }
        }
        return SourceDescriptor(
            sensor: sensor, device: device.identifier, source: device.identifier + "#" + sensor.rawValue,
            columns: columns, details: details)
    }

    /// One heart-rate row: bpm, confidence, RR count and `rrColumns` RR columns (1/1024 s; zero
    /// when unused). HRS carries no confidence: skin contact reported → high (2); contact not
    /// supported → medium (1). RR intervals beyond `rrColumns` are dropped (the caller counts them).
    public static func heartRate(_ beat: HeartRateTimeline.Beat, contact: HeartRateMeasurement.SensorContact?) -> [[Int64]] {
        let rr = beat.rrIntervals.prefix(rrColumns).map(Int64.init)
        return [[Int64(beat.beatsPerMinute)], [contact == .inContact ? 2 : 1], [Int64(rr.count)]]
            + (0..<rrColumns).map { [$0 < rr.count ? rr[$0] : 0] }
    }

    /// The columns of a PMD frame's samples: ECG µV, lead (2: left arm minus right arm, lead I as
    /// a chest strap sees it), flags, rate and session; PPG three optical channels and ambient.
    public static func pmd(
        _ timed: PMDStreamTimeline.TimedFrame, type: PMDMeasurementType, sampleRate: Int,
        sessionStart: Int64
    ) -> [[Int64]] {
        let count = timed.sampleTimes.count
        let samples = timed.frame.samples
        if type == .ecg {
            return [
                samples.map { Int64($0.first ?? 0) }, .init(repeating: 2, count: count), .init(repeating: 0, count: count),
                .init(repeating: Int64(sampleRate), count: count), .init(repeating: sessionStart, count: count),
            ]
        }
        return (0..<4).map { channel in samples.map { Int64(channel < $0.count ? $0[channel] : 0) } }
    }
}
