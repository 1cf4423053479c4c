import SensorKitModel

/// A sensor a wearable records through Polar Measurement Data, and how its stream is started.
/// `all` is the one table of them: the link machine starts, stops, times and reports every PMD
/// stream from it, and the sensors a `[wearable]` section may list are read from it, so a new PMD
/// measurement (accelerometer, PPI) is one entry here plus its columns in `WearableSamples`.
struct PMDStreamKind: Hashable, Sendable {
    var sensor: SRSensor
    var measurementType: PMDMeasurementType
    /// The sample rate asked for where the device offers it; otherwise its first offered rate.
    var preferredSampleRate: UInt32?
    /// The rate assumed when the device's settings name none.
    var fallbackSampleRate: Int

    static let all: [PMDStreamKind] = [
        PMDStreamKind(sensor: .electrocardiogram, measurementType: .ecg, preferredSampleRate: 130, fallbackSampleRate: 130),
        PMDStreamKind(sensor: .photoplethysmogram, measurementType: .ppg, preferredSampleRate: nil, fallbackSampleRate: 55),
    ]

    static func of(_ sensor: SRSensor) -> PMDStreamKind? { all.first { $0.sensor == sensor } }

    static func of(_ type: PMDMeasurementType) -> PMDStreamKind? { all.first { $0.measurementType == type } }

    /// One value per offered setting for the start command: the preferred rate where offered,
    /// otherwise each setting's first value; settings the start command does not take are left out.
    func chosenSettings(_ offered: [PMDSetting]) -> [PMDSetting] {
        offered.compactMap { setting -> PMDSetting? in
            guard [.sampleRate, .resolution, .range, .channels].contains(setting.kind), let first = setting.values.first
            else { return nil }
            if setting.kind == .sampleRate, let preferred = preferredSampleRate, setting.values.contains(preferred) {
                return PMDSetting(setting.kind, [preferred])
            }
            return PMDSetting(setting.kind, [first])
        }
    }
}

/// The characteristics a wearable's link uses, by service and characteristic UUID.
extension GATTCharacteristicID {
    static let heartRateMeasurement = GATTCharacteristicID(service: .heartRateService, characteristic: .heartRateMeasurement)
    static let bodySensorLocation = GATTCharacteristicID(service: .heartRateService, characteristic: .bodySensorLocation)
    static let batteryLevel = GATTCharacteristicID(service: .batteryService, characteristic: .batteryLevel)
    static let pmdControlPoint = GATTCharacteristicID(
        service: .polarMeasurementDataService, characteristic: .polarMeasurementControlPoint)
    static let pmdData = GATTCharacteristicID(service: .polarMeasurementDataService, characteristic: .polarMeasurementData)

    static func deviceInformation(_ characteristic: BluetoothUUID) -> GATTCharacteristicID {
        GATTCharacteristicID(service: .deviceInformationService, characteristic: characteristic)
    }
}
