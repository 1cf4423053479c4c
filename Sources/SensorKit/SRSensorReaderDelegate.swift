import Foundation
import SensorKitModel

/// Apple's `SRSensorReaderDelegate`: every method optional (default implementations below), with
/// Apple's exact Swift signatures. There is no `didStartRecording`: success of `startRecording`
/// is `sensorReaderWillStartRecording`, success of `stopRecording` is `sensorReaderDidStopRecording`.
///
/// Callbacks arrive on the reader's `delegateQueue` (a serial queue per reader), in order.
public protocol SRSensorReaderDelegate: NSObjectProtocol {
    /// A fetched sample or batch; return false to stop the fetch (no further callbacks for it).
    func sensorReader(
        _ reader: SRSensorReader, fetching fetchRequest: SRFetchRequest,
        didFetchResult result: SRFetchResult<AnyObject>
    ) -> Bool
    func sensorReader(_ reader: SRSensorReader, didCompleteFetch fetchRequest: SRFetchRequest)
    func sensorReader(_ reader: SRSensorReader, fetching fetchRequest: SRFetchRequest, failedWithError error: any Error)
    func sensorReader(_ reader: SRSensorReader, didChange authorizationStatus: SRAuthorizationStatus)
    func sensorReaderWillStartRecording(_ reader: SRSensorReader)
    func sensorReader(_ reader: SRSensorReader, startRecordingFailedWithError error: any Error)
    func sensorReaderDidStopRecording(_ reader: SRSensorReader)
    func sensorReader(_ reader: SRSensorReader, stopRecordingFailedWithError error: any Error)
    func sensorReader(_ reader: SRSensorReader, didFetch devices: [SRDevice])
    func sensorReader(_ reader: SRSensorReader, fetchDevicesDidFailWithError error: any Error)
}

extension SRSensorReaderDelegate {
    public func sensorReader(
        _ reader: SRSensorReader, fetching fetchRequest: SRFetchRequest,
        didFetchResult result: SRFetchResult<AnyObject>
    ) -> Bool { true }
    public func sensorReader(_ reader: SRSensorReader, didCompleteFetch fetchRequest: SRFetchRequest) {}
    public func sensorReader(_ reader: SRSensorReader, fetching fetchRequest: SRFetchRequest, failedWithError error: any Error) {}
    public func sensorReader(_ reader: SRSensorReader, didChange authorizationStatus: SRAuthorizationStatus) {}
    public func sensorReaderWillStartRecording(_ reader: SRSensorReader) {}
    public func sensorReader(_ reader: SRSensorReader, startRecordingFailedWithError error: any Error) {}
    public func sensorReaderDidStopRecording(_ reader: SRSensorReader) {}
    public func sensorReader(_ reader: SRSensorReader, stopRecordingFailedWithError error: any Error) {}
    public func sensorReader(_ reader: SRSensorReader, didFetch devices: [SRDevice]) {}
    public func sensorReader(_ reader: SRSensorReader, fetchDevicesDidFailWithError error: any Error) {}
}
