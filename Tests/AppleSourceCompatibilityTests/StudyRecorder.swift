// Study code written the way Apple's documentation writes SensorKit code. The only change from
// an iOS app is the import lines: `import Foundation` stands where `import CoreMotion` stood.
// Nothing in this file may use a sensorkitd-specific name: it proves source compatibility.
import Foundation
import SensorKit

final class StudyRecorder: NSObject, SRSensorReaderDelegate {
    let ambientLightReader = SRSensorReader(sensor: .ambientLightSensor)
    let accelerometerReader = SRSensorReader(sensor: .accelerometer)

    // Collected on the readers' delegate queues; read by the test after completion.
    let lock = NSLock()
    var luxValues: [Double] = []
    var accelerations: [CMAcceleration] = []
    var callsAndSeconds: [(calls: Int, seconds: TimeInterval)] = []
    var messagesAndContacts: [(messages: Int, contacts: Int)] = []
    var visitedPlaces: [(place: UUID, category: SRVisit.LocationCategory, metresFromHome: Double)] = []
    var resultTimestamps: [SRAbsoluteTime] = []
    var completedFetches = 0
    var startedRecording = 0
    var devicesSeen: [String] = []
    var errors: [SRError.Code] = []
    var statusChanges: [SRAuthorizationStatus] = []
    var stopAfterFirstResult = false

    func requestAccess(completion: @escaping (Error?) -> Void) {
        SRSensorReader.requestAuthorization(sensors: [.ambientLightSensor, .accelerometer]) { (error: Error?) in
            if let error = error {
                print("Authorization request failed: \(error.localizedDescription)")
            }
            completion(error)
        }
    }

    func startRecording() {
        ambientLightReader.delegate = self
        accelerometerReader.delegate = self
        if ambientLightReader.authorizationStatus == .authorized {
            ambientLightReader.startRecording()
        }
        if accelerometerReader.authorizationStatus == .authorized {
            accelerometerReader.startRecording()
        }
    }

    func fetch(reader: SRSensorReader, device: SRDevice, hoursBack: Double) {
        let request = SRFetchRequest()
        request.device = device
        let now = CFAbsoluteTimeGetCurrent()
        request.from = SRAbsoluteTime.fromCFAbsoluteTime(_cf: now - hoursBack * 3600)
        request.to = SRAbsoluteTime.fromCFAbsoluteTime(_cf: now)
        reader.fetch(request)
    }

    // MARK: SRSensorReaderDelegate

    func sensorReaderWillStartRecording(_ reader: SRSensorReader) {
        lock.lock(); startedRecording += 1; lock.unlock()
    }

    func sensorReader(_ reader: SRSensorReader, startRecordingFailedWithError error: Error) {
        record(error)
    }

    func sensorReader(_ reader: SRSensorReader, didFetch devices: [SRDevice]) {
        lock.lock(); devicesSeen += devices.map { $0.model }; lock.unlock()
        for device in devices {
            fetch(reader: reader, device: device, hoursBack: 1)
        }
    }

    func sensorReader(_ reader: SRSensorReader, fetchDevicesDidFailWithError error: Error) {
        record(error)
    }

    func sensorReader(
        _ reader: SRSensorReader, fetching fetchRequest: SRFetchRequest,
        didFetchResult result: SRFetchResult<AnyObject>
    ) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        resultTimestamps.append(result.timestamp)
        switch reader.sensor {
        case .ambientLightSensor:
            if let sample = result.sample as? SRAmbientLightSample {
                luxValues.append(sample.lux.converted(to: .lux).value)
            }
        case .accelerometer:
            if let samples = result.sample as? [CMRecordedAccelerometerData] {
                for sample in samples {
                    accelerations.append(sample.acceleration)
                }
            }
        case .phoneUsageReport:
            if let report = result.sample as? SRPhoneUsageReport {
                callsAndSeconds.append(
                    (report.totalIncomingCalls + report.totalOutgoingCalls, report.totalPhoneCallDuration))
            }
        case .messagesUsageReport:
            if let report = result.sample as? SRMessagesUsageReport {
                messagesAndContacts.append(
                    (report.totalIncomingMessages + report.totalOutgoingMessages, report.totalUniqueContacts))
            }
        case .visits:
            if let visit = result.sample as? SRVisit {
                visitedPlaces.append((visit.identifier, visit.locationCategory, visit.distanceFromHome))
            }
        default:
            break
        }
        return !stopAfterFirstResult
    }

    func sensorReader(_ reader: SRSensorReader, didCompleteFetch fetchRequest: SRFetchRequest) {
        lock.lock(); completedFetches += 1; lock.unlock()
    }

    func sensorReader(_ reader: SRSensorReader, fetching fetchRequest: SRFetchRequest, failedWithError error: Error) {
        record(error)
    }

    func sensorReader(_ reader: SRSensorReader, didChange authorizationStatus: SRAuthorizationStatus) {
        lock.lock(); statusChanges.append(authorizationStatus); lock.unlock()
    }

    func sensorReaderDidStopRecording(_ reader: SRSensorReader) {}

    func sensorReader(_ reader: SRSensorReader, stopRecordingFailedWithError error: Error) {
        record(error)
    }

    private func record(_ error: Error) {
        if let srError = error as? SRError {
            lock.lock(); errors.append(srError.code); lock.unlock()
            if srError.code == .invalidEntitlement {
                print("This app is missing the SensorKit entitlement for the sensor")
            }
        }
    }
}

/// Other spellings study code uses.
func otherApplePatterns() -> [Any] {
    let dayAgo = SRAbsoluteTime(CFAbsoluteTimeGetCurrent() - 86400)
    let now = SRAbsoluteTime.current()
    let date = Date(timeIntervalSinceReferenceDate: now.toCFAbsoluteTime())
    let fromCF = SRAbsoluteTime.fromCFAbsoluteTime(_cf: date.timeIntervalSinceReferenceDate)
    let device = SRDevice.current
    let description = "\(device.name) \(device.model) \(device.systemName) \(device.systemVersion) \(device.productType)"
    let tombstones = SRSensor.accelerometer.rawValue.sr_sensorForDeletionRecordsFromSensor()
    let reasons: [SRDeletionReason] = [.userInitiated, .lowDiskSpace, .ageLimit, .noInterestedClients, .systemInitiated]
    let statuses: [SRAuthorizationStatus] = [.notDetermined, .authorized, .denied]
    let sensors: Set<SRSensor> = [
        .rotationRate, .ambientPressure, .heartRate, .electrocardiogram, .photoplethysmogram,
        .onWristState, .pedometerData, .keyboardMetrics, .deviceUsageReport, .phoneUsageReport, .messagesUsageReport,
        .visits,
    ]
    return [dayAgo, fromCF, description, tombstones as Any, reasons, statuses, sensors]
}
