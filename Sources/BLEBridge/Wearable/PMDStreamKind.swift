import SensorKitModel

/// A sensor a wearable records through Polar Measurement Data, and how its stream is started.
/// `all` is the one table of them: the link machine starts, stops, times and reports every PMD
/// stream from it, and the sensors a `[wearable]` section may list are read from it, so a new PMD
/// measurement is one entry here plus its columns in `WearableSamples`.
struct PMDStreamKind: Hashable, Sendable {
    var sensor: SRSensor
    var measurementType: PMDMeasurementType
    /// The sample rate asked for where the device offers it; otherwise its first offered rate.
    var preferredSampleRate: UInt32?
    /// The rate assumed when the device's settings name none.
    var fallbackSampleRate: Int
    /// The stream adds to a sensor the Heart Rate Service already records (PPI to heart rate):
    /// a device that does not offer it or refuses it costs nothing — no gap, the sensor goes on
    /// from HRS. A stream that is not supplementary is its sensor's only source.
    var supplementary = false

    static let all: [PMDStreamKind] = [
        PMDStreamKind(sensor: .electrocardiogram, measurementType: .ecg, preferredSampleRate: 130, fallbackSampleRate: 130),
        PMDStreamKind(sensor: .photoplethysmogram, measurementType: .ppg, preferredSampleRate: nil, fallbackSampleRate: 55),
        PMDStreamKind(sensor: .accelerometer, measurementType: .acc, preferredSampleRate: 50, fallbackSampleRate: 50),
        // PP intervals come when a pulse does: no rate; the fallback only sizes nothing.
        PMDStreamKind(
            sensor: .heartRate, measurementType: .ppi, preferredSampleRate: nil, fallbackSampleRate: 1, supplementary: true),
    ]

    /// The sensors whose only source is PMD (ECG, PPG, accelerometer).
    static let sensors: [SRSensor] = all.filter { !$0.supplementary }.map(\.sensor)

    /// The PMD stream that is `sensor`'s only source, if any.
    static func of(_ sensor: SRSensor) -> PMDStreamKind? { all.first { $0.sensor == sensor && !$0.supplementary } }

    static func of(_ type: PMDMeasurementType) -> PMDStreamKind? { all.first { $0.measurementType == type } }

    /// Every PMD stream feeding `sensor`.
    static func feeding(_ sensor: SRSensor) -> [PMDStreamKind] { all.filter { $0.sensor == sensor } }

    /// The stream's short name in `sensorkitctl devices` (`ecg`, `ppg`, `acc`, `ppi`).
    var statusKey: String { "\(measurementType)" }

    /// One value per offered setting for the start command: the preferred rate where offered,
    /// the widest resolution offered, otherwise each setting's first value; settings the start
    /// command does not take are left out.
    func chosenSettings(_ offered: [PMDSetting]) -> [PMDSetting] {
        offered.compactMap { setting -> PMDSetting? in
            guard [.sampleRate, .resolution, .range, .channels].contains(setting.kind), let first = setting.values.first
            else { return nil }
            if setting.kind == .sampleRate, let preferred = preferredSampleRate, setting.values.contains(preferred) {
                return PMDSetting(setting.kind, [preferred])
            }
            if setting.kind == .resolution, let widest = setting.values.max() { return PMDSetting(setting.kind, [widest]) }
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
