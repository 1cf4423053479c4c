import Dispatch
import Glibc
import SensorSystem

/// `sensorkit-wearable`: serves the wearables of its command line until `--duration` passes or
/// SIGTERM/SIGINT arrives, then takes their entries away. Returns the exit code.
public enum WearableEmulatorCommand {
    public static func run(_ arguments: [String]) -> Int32 {
        let options: WearableEmulatorOptions
        do {
            options = try WearableEmulatorOptions.parse(arguments)
        } catch {
            printError("sensorkit-wearable: \(error)\n\n\(WearableEmulatorOptions.usage)")
            return 2
        }
        if options.help {
            say(WearableEmulatorOptions.usage)
            return 0
        }
        let directory = options.directory ?? "."
        let stop = DispatchSemaphore(value: 0)
        let signals = DispatchQueue(label: "sensorkit-wearable-signals")
        var sources: [any DispatchSourceSignal] = []
        do {
            try SystemCalls.ignoreSignal(SIGPIPE)
            for number in [SIGTERM, SIGINT] {
                try SystemCalls.ignoreSignal(number)
                let source = DispatchSource.makeSignalSource(signal: number, queue: signals)
                source.setEventHandler { stop.signal() }
                source.resume()
                sources.append(source)
            }
            try SystemFiles.makeDirectory(directory)
        } catch {
            printError("sensorkit-wearable: \(error)")
            return 1
        }
        var faults = EmulatedWearable.Faults(
            disconnectEvery: options.disconnectEvery, clockResetAfter: options.clockResetAfter,
            serverMTU: options.serverMTU)
        faults.floodUndecodable = options.floodUndecodable
        var wearables: [EmulatedWearable] = []
        for profile in options.profiles() {
            do {
                let wearable = try EmulatedWearable(directory: directory, profile: profile, faults: faults)
                wearables.append(wearable)
                say("serving \"\(profile.name)\" (\(profile.model)) at \(wearable.peripheral.attPath)")
            } catch {
                printError("sensorkit-wearable: \(profile.address): \(error)")
                for wearable in wearables { wearable.stop() }
                return 1
            }
        }
        var controller: EmulatedController?
        if let path = options.controller {
            do {
                controller = try EmulatedController(directory: directory, socketPath: path)
                say("serving an HCI controller at \(path)")
            } catch {
                printError("sensorkit-wearable: --controller \(path): \(error)")
                for wearable in wearables { wearable.stop() }
                return 1
            }
        }
        if let duration = options.duration {
            _ = stop.wait(timeout: .now() + .nanoseconds(Int(duration * 1e9)))
        } else {
            stop.wait()
        }
        controller?.stop()
        for wearable in wearables { wearable.stop() }
        for source in sources { source.cancel() }
        say("stopped; removed \(wearables.count) wearable(s) from \(directory)")
        return 0
    }

    /// Written at once to fd 1 (no stdio buffer), so a parent reading the pipe sees each line as it is said.
    private static func say(_ text: String) {
        var output = DescriptorOutput(fd: 1)
        print(text, to: &output)
    }

    private static func printError(_ text: String) {
        var output = DescriptorOutput(fd: 2)
        print(text, to: &output)
    }

    private struct DescriptorOutput: TextOutputStream {
        let fd: Int32
        mutating func write(_ string: String) {
            var bytes = Array(string.utf8)
            _ = bytes.withUnsafeMutableBytes { try? SystemCalls.write(fd, UnsafeRawBufferPointer($0), "fd \(fd)") }
        }
    }
}
