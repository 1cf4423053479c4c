// A child process for SensorStoreTests' crash test: ingests into a store in real time until it
// is killed with SIGKILL. Usage: store-ingest-child DIRECTORY
//
// Writes DIRECTORY/timeline.json first, then appends a batch of 10 samples every 10 ms (sample n
// has boot time base + n ms and values (n, −n, 3n)) and prints "appended N" after each append,
// so the parent knows how much was handed to the store before the kill. Exits by itself after
// 60 s in case the parent died.
import Foundation
import SensorKitModel
import SensorStore
import SensorSystem

/// Writes a line to stdout unbuffered, so the parent sees it before the kill.
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

let directory = CommandLine.arguments[1]
let clock = LinuxSystemClock()
var timeline = Timeline.founded(by: clock)
timeline.adoptCurrentBoot(of: clock)
try SystemFiles.makeDirectory(directory)
try TimelineFile.save(timeline, to: directory + "/" + TimelineFile.fileName)

var configuration = StoreConfiguration(directory: directory)
configuration.retention = RetentionPolicy(hold: 0, window: 7 * 24 * RetentionPolicy.hour)
let store = try SensorStore(configuration: configuration, clock: clock, timeline: timeline)
let stream = try store.register(StreamDescriptor(
    sensor: .accelerometer,
    schema: SampleSchema([
        .integer(name: "x", scale: 1, offset: 0, unit: ""), .integer(name: "y", scale: 1, offset: 0, unit: ""),
        .integer(name: "z", scale: 1, offset: 0, unit: ""),
    ])))
let base = clock.boottimeNanoseconds()
say("base \(base)")
let deadline = Date().addingTimeInterval(60)
var next: Int64 = 0
while Date() < deadline {
    let indexes = (next..<next + 10)
    let times = indexes.map { base + $0 * 1_000_000 }
    store.append(
        SampleBatch(boot: clock.bootID, sensorTimes: times, receiveTimes: times.map { $0 + 500 },
                    columns: [.integers(Array(indexes)), .integers(indexes.map { -$0 }), .integers(indexes.map { 3 * $0 })]),
        to: stream)
    next += 10
    say("appended \(next)")
    usleep(10_000)
}
try store.close()
