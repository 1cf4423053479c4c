import Foundation
import SensorSystem

// `make bench`: each section prints its figures beside anchors measured in the same run.
// Usage: sensorkit-bench [section …]   (sections: store, decode, encode, fetch, iio, live, ble, export, daemon; ble-clock, ble-daemon: ble's clock mapping, daemon path alone; ble-bluez: bluez beside emulated; live-ble: live's BLE half alone; iio-daemon: iio's whole-daemon battery figures alone; default: all)
let sections = Array(CommandLine.arguments.dropFirst())
// As sensorkitd and the SensorKit client do (SENSORKIT_MALLOC=default measures glibc's defaults).
let allocator = AllocatorTuning.forBulkData()
// The fetch benchmark's daemon runs in a child process of this same binary.
if sections.first == "serve-fetch-daemon" {
    try FetchBenchmark.serve(samples: sections.dropFirst().first.flatMap { Int($0) } ?? FetchBenchmark.samples)
    exit(0)
}
if sections.first == "serve-daemon-rig" {
    try DaemonBenchmark.serveRig()
    exit(0)
}
print("sensorkit-bench: sections \(sections.isEmpty ? "all" : sections.joined(separator: ", "))")
print("allocator: \(allocator)")
if sections.isEmpty || sections.contains("store") { try StoreBenchmark.run() }
if sections.isEmpty || sections.contains("decode") { try DecodeBenchmark.run() }
if sections.isEmpty || sections.contains("encode") { EncodeBenchmark.run() }
if sections.isEmpty || sections.contains("fetch") { try FetchBenchmark.run() }
try IIOBenchmark.main(sections)
if sections.isEmpty || sections.contains("live") { try LiveLatencyBenchmark.run() }
if sections.isEmpty || sections.contains("live") || sections.contains("live-ble") { try BLELiveLatencyBenchmark.run() }
if sections.isEmpty || sections.contains("ble") || sections.contains("ble-clock") { BLEClockBenchmark.run() }
if sections.isEmpty || sections.contains("ble") || sections.contains("ble-daemon") { BLEDaemonPathBenchmark.run() }
if sections.isEmpty || sections.contains("ble") || sections.contains("ble-bluez") { BLEBlueZPathBenchmark.run() }
if sections.isEmpty || sections.contains("export") { try ExportBenchmark.run() }
if sections.isEmpty || sections.contains("daemon") { try DaemonBenchmark.run() }
