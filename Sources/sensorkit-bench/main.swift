import Foundation

// `make bench`: each section prints its figures beside anchors measured in the same run.
// Usage: sensorkit-bench [section …]   (sections: store, fetch, iio; default: all that exist)
let sections = Array(CommandLine.arguments.dropFirst())
print("sensorkit-bench: sections \(sections.isEmpty ? "all" : sections.joined(separator: ", "))")
