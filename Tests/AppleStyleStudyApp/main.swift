// A study app of its own: the Apple-style study code (`StudyRecorder`) fetches the last hour of one
// sensor from the daemon at `SENSORKIT_SOCKET`, as the app `SENSORKIT_APP`, and prints what the
// study prints. The daemon's end-to-end tests run it so that the study code runs as an app would,
// in its own process, and never shares the test process's client with another test.
import AppleStyleStudy
import Foundation
import SensorKit

guard CommandLine.arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: apple-style-study SENSOR (e.g. phoneUsageReport)\n".utf8))
    exit(2)
}
let study = StudyRecorder()
study.fetchLastHour(of: SRSensor(rawValue: CommandLine.arguments[1]))
let deadline = Date().addingTimeInterval(20)
while Date() < deadline, !study.locked({ $0.completedFetches > 0 || !$0.errors.isEmpty }) {
    Thread.sleep(forTimeInterval: 0.02)
}
let (completed, errors) = study.locked { ($0.completedFetches, $0.errors) }
if !errors.isEmpty {
    FileHandle.standardError.write(Data("fetch failed: \(errors.map(\.rawValue))\n".utf8))
    exit(1)
}
exit(completed > 0 ? 0 : 3)
