/// What sensorkitd knows about each `SRSensor` on Linux: where its data comes from, how Apple
/// names its entitlement and usage key, and whether results are batches (docs/sensorkit-mapping.md).
public struct SensorDescriptor: Hashable, Sendable {
    /// Where samples come from on Linux; `.none` means the sensor exists as a name only.
    public enum LinuxSource: String, Hashable, Sendable {
        case iio, bluetoothLE = "bluetooth-le", evdev, modemManager = "modemmanager", none
        /// logind on the system bus and the person's session (compositor, notifications) through
        /// the session agent (docs/device-usage.md).
        case session
    }

    public let sensor: SRSensor
    /// The Swift name of the constant (`ambientLightSensor`), for people and the CLI.
    public let name: String
    /// The value in `com.apple.developer.sensorkit.reader.allow`, where Apple documents one.
    public let entitlement: String?
    /// The `NSSensorKitUsageDetail` key whose `Description`/`Required` apply to this sensor.
    public let usageDetailKey: String?
    public let source: LinuxSource
    /// What feeds it on Linux, for `sensorkitctl sensors`.
    public let sourceDescription: String
    /// The sample class name delivered in `SRFetchResult.sample`.
    public let sampleClass: String
    /// Whether each result carries an array of samples (one batch per result).
    public let isBatched: Bool

    public var isSupportedOnLinux: Bool { source != .none }
}

/// The catalog of every sensor constant, and the verdict for names it does not know.
public enum SensorCatalog {
    public static let all: [SensorDescriptor] = [
        d(
            .ambientLightSensor, "ambientLightSensor", "ambient-light-sensor", "SRSensorUsageAmbientLightSensor",
            .iio, "IIO in_illuminance*, in_intensity_{red,green,blue,clear}", "SRAmbientLightSample"),
        d(
            .accelerometer, "accelerometer", "motion-accelerometer", "SRSensorUsageMotion",
            .iio, "IIO in_accel_*", "CMRecordedAccelerometerData", batched: true),
        d(
            .rotationRate, "rotationRate", "motion-rotation-rate", "SRSensorUsageMotion",
            .iio, "IIO in_anglvel_*", "CMRecordedRotationRateData", batched: true),
        d(
            .visits, "visits", "visits", "SRSensorUsageVisits",
            .session, "the session agent: GeoClue fixes reduced to visits in the session, never a coordinate", "SRVisit"),
        d(
            .pedometerData, "pedometerData", "pedometer", "SRSensorUsagePedometer",
            .iio, "IIO in_steps_input (polled)", "CMPedometerData"),
        d(
            .deviceUsageReport, "deviceUsageReport", "device-usage", "SRSensorUsageDeviceUsage",
            .session, "logind, and the session agent: compositor, notifications; per 15-minute interval, never a text",
            "SRDeviceUsageReport"),
        d(
            .messagesUsageReport, "messagesUsageReport", "messages-usage", "SRSensorUsageMessageUsage",
            .modemManager, "ModemManager SMS: counts per 15-minute interval, never a number or a text",
            "SRMessagesUsageReport"),
        d(
            .phoneUsageReport, "phoneUsageReport", "phone-usage", "SRSensorUsagePhoneUsage",
            .modemManager, "ModemManager voice calls: counts and durations per 15-minute interval, never a number",
            "SRPhoneUsageReport"),
        d(
            .onWristState, "onWristState", "on-wrist", "SRSensorUsageWristDetection",
            .bluetoothLE, "BLE Heart Rate Service sensor-contact bit", "SRWristDetection"),
        d(
            .keyboardMetrics, "keyboardMetrics", "keyboard-metrics", "SRSensorUsageKeyboardMetrics",
            .evdev, "evdev keyboards: key classes counted per 15-minute interval, never a key", "SRKeyboardMetrics"),
        d(
            .siriSpeechMetrics, "siriSpeechMetrics", "speech-metrics-siri", "SRSensorUsageSpeechMetrics",
            .none, "", "SRSpeechMetrics"),
        d(
            .telephonySpeechMetrics, "telephonySpeechMetrics", "speech-metrics-telephony",
            "SRSensorUsageSpeechMetrics", .none, "", "SRSpeechMetrics"),
        d(
            .ambientPressure, "ambientPressure", "ambient-pressure", "SRSensorUsageElevation",
            .iio, "IIO in_pressure*, in_temp*", "CMRecordedPressureData", batched: true),
        d(.mediaEvents, "mediaEvents", nil, "SRSensorUsageMediaEvents", .none, "", "SRMediaEvent"),
        d(
            .wristTemperature, "wristTemperature", "wrist-temperature", "SRSensorUsageWristTemperature",
            .none, "", "SRWristTemperatureSession"),
        d(
            .heartRate, "heartRate", "heart-rate", "SRSensorUsageHeartRate",
            .bluetoothLE, "BLE Heart Rate Service 0x180D", "CMHighFrequencyHeartRateData"),
        d(.faceMetrics, "faceMetrics", nil, "SRSensorUsageFacialMetrics", .none, "", "SRFaceMetrics"),
        d(.odometer, "odometer", nil, "SRSensorUsageOdometer", .none, "", "CMOdometerData"),
        d(
            .electrocardiogram, "electrocardiogram", "ecg", "SRSensorUsageECG",
            .bluetoothLE, "Polar PMD ECG", "SRElectrocardiogramSample", batched: true),
        d(
            .photoplethysmogram, "photoplethysmogram", "ppg", "SRSensorUsagePPG",
            .bluetoothLE, "Polar PMD PPG", "SRPhotoplethysmogramSample", batched: true),
        d(.acousticSettings, "acousticSettings", nil, nil, .none, "", "SRAcousticSettings"),
        d(.sleepSessions, "sleepSessions", "sleep-sessions", "SRSensorUsageSleep", .none, "", "SRSleepSession"),
        d(.headphoneMotion, "headphoneMotion", nil, nil, .none, "", ""),
        d(.headphoneSettings, "headphoneSettings", nil, nil, .none, "", ""),
    ]

    private static let bySensor: [SRSensor: SensorDescriptor] =
        Dictionary(uniqueKeysWithValues: all.map { ($0.sensor, $0) })

    /// The descriptor of a known sensor constant; nil for a name Apple does not define.
    public static func descriptor(for sensor: SRSensor) -> SensorDescriptor? { bySensor[sensor] }

    /// The sensor named by a Swift constant name (`accelerometer`), a raw value, or an
    /// entitlement string; used by the CLI and the config parser.
    public static func sensor(named text: String) -> SRSensor? {
        all.first { $0.name == text || $0.sensor.rawValue == text || $0.entitlement == text }?.sensor
    }

    /// The sensors an entitlement array allows. Apple's `ecg`/`ppg` are matched without regard to
    /// case because third-party documentation writes `ECG`/`PPG` (docs/sensorkit-mapping.md).
    public static func sensors(allowedBy entitlements: [String]) -> Set<SRSensor> {
        let wanted = Set(entitlements.map { $0.lowercased() })
        return Set(all.filter { $0.entitlement.map { wanted.contains($0.lowercased()) } ?? false }.map(\.sensor))
    }

    /// Whether sensorkitd can record this sensor here, and if not, why — never a crash.
    public static func support(for sensor: SRSensor) -> Support {
        guard let descriptor = descriptor(for: sensor) else {
            if let parent = sensor.parentOfDeletionRecords {
                return support(for: parent).isSupported
                    ? .deletionRecords(of: parent) : .unsupported(reason: "\(parent) has no Linux source")
            }
            return .unsupported(reason: "'\(sensor.rawValue)' is not a SensorKit sensor")
        }
        switch descriptor.source {
        case .none:
            return .unsupported(reason: "\(descriptor.name) has no Linux source in sensorkitd")
        case .iio, .bluetoothLE, .evdev, .session, .modemManager:
            return .supported(descriptor)
        }
    }

    public enum Support: Hashable, Sendable {
        case supported(SensorDescriptor)
        /// The deletion-record stream of a supported sensor: fetchable, never recorded itself.
        case deletionRecords(of: SRSensor)
        case unsupported(reason: String)

        public var isSupported: Bool {
            if case .unsupported = self { return false }
            return true
        }
    }

    private static func d(
        _ sensor: SRSensor, _ name: String, _ entitlement: String?, _ usageKey: String?,
        _ source: SensorDescriptor.LinuxSource, _ sourceDescription: String, _ sampleClass: String,
        batched: Bool = false
    ) -> SensorDescriptor {
        SensorDescriptor(
            sensor: sensor, name: name, entitlement: entitlement, usageDetailKey: usageKey,
            source: source, sourceDescription: sourceDescription, sampleClass: sampleClass,
            isBatched: batched)
    }
}
