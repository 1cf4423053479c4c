// Study code written the way Apple's documentation writes SensorKit code. The changes from an
// iOS app are the import lines (`import Foundation` stands where `import CoreMotion` stood) and
// `public`, so that both the source-compatibility tests and the daemon's end-to-end tests run this
// one study code. Nothing in this file may use a sensorkitd-specific name: it proves source
// compatibility.
import Foundation
import SensorKit

public final class StudyRecorder: NSObject, SRSensorReaderDelegate {
    public let ambientLightReader = SRSensorReader(sensor: .ambientLightSensor)
    public let accelerometerReader = SRSensorReader(sensor: .accelerometer)
    /// Readers made for one fetch (`fetchLastHour(of:)`), kept while their fetch runs.
    var otherReaders: [SRSensorReader] = []

    // Collected on the readers' delegate queues; read by the test after completion.
    public let lock = NSLock()
    public var luxValues: [Double] = []
    public var accelerations: [CMAcceleration] = []
    public var phoneReports: [SRPhoneUsageReport] = []
    public var messagesReports: [SRMessagesUsageReport] = []
    public var visits: [SRVisit] = []
    public var deviceUsageReports: [SRDeviceUsageReport] = []
    /// What the study printed, a line per report or visit.
    public var printed: [String] = []
    public var resultTimestamps: [SRAbsoluteTime] = []
    public var completedFetches = 0
    public var startedRecording = 0
    public var devicesSeen: [String] = []
    public var errors: [SRError.Code] = []
    public var statusChanges: [SRAuthorizationStatus] = []
    public var stopAfterFirstResult = false

    public override init() { super.init() }

    public func requestAccess(completion: @escaping (Error?) -> Void) {
        SRSensorReader.requestAuthorization(sensors: [.ambientLightSensor, .accelerometer]) { (error: Error?) in
            if let error = error {
                print("Authorization request failed: \(error.localizedDescription)")
            }
            completion(error)
        }
    }

    public func startRecording() {
        ambientLightReader.delegate = self
        accelerometerReader.delegate = self
        if ambientLightReader.authorizationStatus == .authorized {
            ambientLightReader.startRecording()
        }
        if accelerometerReader.authorizationStatus == .authorized {
            accelerometerReader.startRecording()
        }
    }

    /// The last hour of one sensor on this device, through a reader of its own.
    public func fetchLastHour(of sensor: SRSensor) {
        let reader = SRSensorReader(sensor: sensor)
        reader.delegate = self
        lock.lock(); otherReaders.append(reader); lock.unlock()
        fetch(reader: reader, device: SRDevice.current, hoursBack: 1)
    }

    public func fetch(reader: SRSensorReader, device: SRDevice, hoursBack: Double) {
        let request = SRFetchRequest()
        request.device = device
        let now = CFAbsoluteTimeGetCurrent()
        request.from = SRAbsoluteTime.fromCFAbsoluteTime(_cf: now - hoursBack * 3600)
        request.to = SRAbsoluteTime.fromCFAbsoluteTime(_cf: now)
        reader.fetch(request)
    }

    // MARK: SRSensorReaderDelegate

    public func sensorReaderWillStartRecording(_ reader: SRSensorReader) {
        lock.lock(); startedRecording += 1; lock.unlock()
    }

    public func sensorReader(_ reader: SRSensorReader, startRecordingFailedWithError error: Error) {
        record(error)
    }

    public func sensorReader(_ reader: SRSensorReader, didFetch devices: [SRDevice]) {
        lock.lock(); devicesSeen += devices.map { $0.model }; lock.unlock()
        for device in devices {
            fetch(reader: reader, device: device, hoursBack: 1)
        }
    }

    public func sensorReader(_ reader: SRSensorReader, fetchDevicesDidFailWithError error: Error) {
        record(error)
    }

    public func sensorReader(
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
                phoneReports.append(report)
            }
        case .messagesUsageReport:
            if let report = result.sample as? SRMessagesUsageReport {
                messagesReports.append(report)
            }
        case .visits:
            if let visit = result.sample as? SRVisit {
                visits.append(visit)
            }
        case .deviceUsageReport:
            if let report = result.sample as? SRDeviceUsageReport {
                deviceUsageReports.append(report)
            }
        default:
            break
        }
        if let line = StudyRecorder.line(for: result.sample) {
            print(line)
            printed.append(line)
        }
        return !stopAfterFirstResult
    }

    /// The line the study prints for a report or a visit.
    public static func line(for sample: AnyObject) -> String? {
        if let report = sample as? SRDeviceUsageReport {
            var line = "screen wakes: \(report.totalScreenWakes), unlocks: \(report.totalUnlocks)"
            for (category, apps) in report.applicationUsageByCategory.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                let seconds = apps.reduce(0) { $0 + $1.usageTime }
                line += ", \(category.rawValue): \(Int(seconds)) s in \(apps.count) apps"
            }
            return line
        }
        if let report = sample as? SRPhoneUsageReport {
            return "calls in: \(report.totalIncomingCalls), out: \(report.totalOutgoingCalls), "
                + "talking: \(report.totalPhoneCallDuration) s, contacts: \(report.totalUniqueContacts), "
                + "over \(report.duration) s"
        }
        if let report = sample as? SRMessagesUsageReport {
            return "messages in: \(report.totalIncomingMessages), out: \(report.totalOutgoingMessages), "
                + "contacts: \(report.totalUniqueContacts), over \(report.duration) s"
        }
        if let visit = sample as? SRVisit {
            return "visit: \(visit.identifier), category \(visit.locationCategory.rawValue), "
                + "\(visit.distanceFromHome) m from home, arrived \(visit.arrivalDateInterval.start.timeIntervalSince1970)"
                + "...\(visit.arrivalDateInterval.end.timeIntervalSince1970), "
                + "left \(visit.departureDateInterval.start.timeIntervalSince1970)"
                + "...\(visit.departureDateInterval.end.timeIntervalSince1970)"
        }
        return nil
    }

    public func sensorReader(_ reader: SRSensorReader, didCompleteFetch fetchRequest: SRFetchRequest) {
        lock.lock(); completedFetches += 1; lock.unlock()
    }

    public func sensorReader(_ reader: SRSensorReader, fetching fetchRequest: SRFetchRequest, failedWithError error: Error) {
        record(error)
    }

    public func sensorReader(_ reader: SRSensorReader, didChange authorizationStatus: SRAuthorizationStatus) {
        lock.lock(); statusChanges.append(authorizationStatus); lock.unlock()
    }

    public func sensorReaderDidStopRecording(_ reader: SRSensorReader) {}

    public func sensorReader(_ reader: SRSensorReader, stopRecordingFailedWithError error: Error) {
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
public func otherApplePatterns() -> [Any] {
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

extension StudyRecorder {
    public func locked<T>(_ body: (StudyRecorder) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(self)
    }
}
