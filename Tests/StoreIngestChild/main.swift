// A child process for SensorStoreTests' crash test and scripts/soak/loss.sh: ingests into a store
// in real time until it is killed with SIGKILL (or its time is up).
//
//   store-ingest-child DIRECTORY [--rate HZ] [--noise] [--min-free BYTES] [--seconds N] [--batch-seconds S]
//   store-ingest-child report DIRECTORY BASE RATE APPENDED [KILL_BOOTTIME_NS]
//
// Ingest: writes DIRECTORY/timeline.json first, then appends a batch every 10 ms — or, with
// --batch-seconds, a batch once its S seconds have all been read, as the IIO capture hands over
// its batches (sample n has
// boot time base + n × period and values (n, −n, 3n), or noise with --noise) and prints "base B"
// once and "appended N" after each append, so the parent knows how much was handed to the store
// before the kill. Default 1000 Hz for 60 s; after --seconds it closes the store and exits.
// Report: reopens the store (as a restart would) and prints what of the APPENDED samples is
// stored, what deletion records cover, and what is neither; with the kill's boot time, how much
// was read before the kill and is not stored (what a SIGKILL cost, hand-over included).
import Foundation
import Glibc
import SensorKitModel
import SensorStore
import SensorSystem

/// Writes a line to stdout unbuffered, so the parent sees it before the kill.
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

let descriptor = StreamDescriptor(
    sensor: .accelerometer,
    schema: SampleSchema([
        .integer(name: "x", scale: 1, offset: 0, unit: ""), .integer(name: "y", scale: 1, offset: 0, unit: ""),
        .integer(name: "z", scale: 1, offset: 0, unit: ""),
    ]))

func configuration(_ directory: String, minFree: Int64?) -> StoreConfiguration {
    var configuration = StoreConfiguration(directory: directory)
    configuration.retention = RetentionPolicy(hold: 0, window: 7 * 24 * RetentionPolicy.hour)
    configuration.minFreeBytes = minFree
    return configuration
}

func report(directory: String, base: Int64, rate: Int64, appended: Int64, killed: Int64?) throws {
    let clock = LinuxSystemClock()
    guard var timeline = try TimelineFile.load(directory + "/" + TimelineFile.fileName) else { fatalError("no timeline") }
    timeline.adoptCurrentBoot(of: clock)
    let store = try SensorStore(configuration: configuration(directory, minFree: nil), clock: clock, timeline: timeline)
    defer { try? store.close() }
    let restart = try store.now()  // just after the open that wrote the crash record
    let anchor = timeline.anchors[clock.bootID]!
    let period = 1_000_000_000 / rate
    var stored = Set<Int64>()
    let cursor = try store.samples(sensor: .accelerometer, device: "host", from: .min, to: .max)
    while let block = try cursor.next() { for i in 0..<block.count { stored.insert(block.sensorTime(at: i)) } }
    // Sorted by end; a record that ended before a sample time ends before every later one.
    let records = try store.deletionRecords(sensor: .accelerometer, device: "host", from: .min, to: .max)
        .sorted { $0.end < $1.end }
    var first = 0
    var covered: [SRDeletionReason: Int64] = [:]
    var unexplained: Int64 = 0
    var lastStored = Int64.min
    for n in 0..<appended {
        let time = anchor + base + n * period
        if stored.contains(time) { lastStored = time; continue }
        while first < records.count, records[first].end < time { first += 1 }
        if let record = records[first...].first(where: { $0.start <= time && time <= $0.end }) {
            covered[record.reason, default: 0] += 1
        } else {
            unexplained += 1
        }
    }
    let lost = appended - Int64(stored.count)
    let seconds = { (count: Int64) in String(format: "%.3f", Double(count) / Double(rate)) }
    say("appended \(appended) stored \(stored.count) lost \(lost) (\(seconds(lost)) s)")
    for (reason, count) in covered.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
        say("covered \(reason) \(count) (\(seconds(count)) s)")
    }
    say("unexplained \(unexplained) (\(seconds(unexplained)) s)")
    if let killed {
        let last = lastStored == .min ? anchor + base : lastStored
        say("read before the kill, not stored \(String(format: "%.3f", Double(anchor + killed - last) / 1e9)) s")
    }
    let crash = store.crashLosses.first
    say(
        "crash record \(crash.map { "\($0.start == lastStored + 1 ? "from just after the last stored sample" : "from \($0.start)") to \($0.end <= restart ? "the restart" : "after the restart"), \(String(format: "%.3f", Double($0.end - $0.start) / 1e9)) s" } ?? "none")"
    )
}

let arguments = CommandLine.arguments
if arguments.count == 6 || arguments.count == 7, arguments[1] == "report" {
    try report(
        directory: arguments[2], base: Int64(arguments[3])!, rate: Int64(arguments[4])!, appended: Int64(arguments[5])!,
        killed: arguments.count == 7 ? Int64(arguments[6])! : nil)
    exit(0)
}

let directory = arguments[1]
var rate: Int64 = 1_000
var noise = false
var minFree: Int64?
var seconds: Double = 60
var batchSeconds: Double?
var index = 2
while index < arguments.count {
    switch arguments[index] {
    case "--rate": rate = Int64(arguments[index + 1])!; index += 2
    case "--noise": noise = true; index += 1
    case "--min-free": minFree = Int64(arguments[index + 1])!; index += 2
    case "--seconds": seconds = Double(arguments[index + 1])!; index += 2
    case "--batch-seconds": batchSeconds = Double(arguments[index + 1])!; index += 2
    default: fatalError("unknown argument \(arguments[index])")
    }
}

let clock = LinuxSystemClock()
var timeline = Timeline.founded(by: clock)
timeline.adoptCurrentBoot(of: clock)
try SystemFiles.makeDirectory(directory)
try TimelineFile.save(timeline, to: directory + "/" + TimelineFile.fileName)

let store = try SensorStore(configuration: configuration(directory, minFree: minFree), clock: clock, timeline: timeline)
let stream = try store.register(descriptor)
let base = clock.boottimeNanoseconds()
say("base \(base)")
let period = 1_000_000_000 / rate
let perBatch = batchSeconds.map { max(1, Int64($0 * Double(rate))) } ?? max(1, rate / 100)
// A hand-over batch goes out once all of it was read; the 10 ms batches as soon as they start.
let ahead = batchSeconds == nil ? perBatch : 0
let start = Date()
var next: Int64 = 0
var random: UInt64 = 0x9E37_79B9_7F4A_7C15
@MainActor func value(_ n: Int64) -> Int64 {
    guard noise else { return n }
    random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
    return Int64(random >> 48) - 32_768
}
while Date().timeIntervalSince(start) < seconds {
    // Keep to real time: the batch due by now (sensor time never runs ahead of the clock).
    let due = Int64(Date().timeIntervalSince(start) * Double(rate))
    if next + perBatch <= due + ahead {
        let indexes = next..<next + perBatch
        let times = indexes.map { base + $0 * period }
        store.append(
            SampleBatch(
                boot: clock.bootID, sensorTimes: times, receiveTimes: times.map { $0 + 500 },
                columns: [
                    .integers(indexes.map(value)), .integers(indexes.map { -value($0) }),
                    .integers(indexes.map { 3 * value($0) }),
                ]),
            to: stream)
        next += perBatch
        say("appended \(next)")
    }
    usleep(10_000)
}
try? store.close()
