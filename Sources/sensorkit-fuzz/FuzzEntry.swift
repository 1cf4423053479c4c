// One binary, one libFuzzer target per parser (docs/reliability.md, "Fuzzing and sanitizers"):
//
//   SENSORKIT_FUZZ_TARGET=<target> sensorkit-fuzz [libFuzzer flags] [corpus dirs]
//       built by scripts/fuzz.sh with -sanitize=fuzzer and -DFUZZING: libFuzzer's main drives it;
//   sensorkit-fuzz <target> <file>…
//       the ordinary build (make test builds it like any executable): replays inputs, e.g. a
//       crash file, through the same parser without libFuzzer.
#if FUZZING
    import Glibc
#else
    import Foundation
#endif

/// The parsers that take bytes from a client, a device or a file, by target name.
enum FuzzTargets {
    static let all: [String: @Sendable ([UInt8]) -> Void] = [
        "wire": WireTarget.run,
        "scan-type": ScanTypeTarget.run,
        "scan": ScanTarget.run,
        "manifest": ManifestTarget.run,
        "configuration": ConfigurationTarget.run,
    ]
}

#if FUZZING
    // libFuzzer's own main runs the fuzzer; the target comes from SENSORKIT_FUZZ_TARGET.
    let selected: @Sendable ([UInt8]) -> Void = {
        guard let name = getenv("SENSORKIT_FUZZ_TARGET").map({ String(cString: $0) }), let target = FuzzTargets.all[name] else {
            print("set SENSORKIT_FUZZ_TARGET to one of \(FuzzTargets.all.keys.sorted().joined(separator: ", "))")
            exit(2)
        }
        return target
    }()

    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
        selected(Array(UnsafeBufferPointer(start: data, count: size)))
        return 0
    }
#else
    @main
    struct Replay {
        static func main() {
            let arguments = CommandLine.arguments
            guard arguments.count >= 2, let target = FuzzTargets.all[arguments[1]] else {
                print("usage: sensorkit-fuzz <\(FuzzTargets.all.keys.sorted().joined(separator: "|"))> <input file>…")
                exit(2)
            }
            for path in arguments.dropFirst(2) {
                guard let data = FileManager.default.contents(atPath: path) else {
                    print("cannot read \(path)")
                    exit(1)
                }
                target(Array(data))
            }
            print("\(arguments.count - 2) inputs ran clean")
        }
    }
#endif
