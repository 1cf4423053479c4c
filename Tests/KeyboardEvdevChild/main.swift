import Foundation
import Glibc
import KeyboardBridge
import SensorKitModel
import SensorSystem
import Synchronization

// The half of KeyboardBridgeTests that runs inside `umockdev-run` (the preload must be there
// from the process's start): opens an emulated evdev node through `EvdevDevice`, reads until it
// has seen `presses` key presses (or 10 s passed), counts them with `KeyboardMeter`, and prints
// what left the reading loop: the device's name and the interval's counts, never a key code.
// With `--source`, the same through `KeyboardSource` (its own reading thread, 1 s intervals):
// the intervals it delivered, summed, once they hold every press.
//
//     keyboard-evdev-child [--source] DEVNODE PRESSES

var arguments = CommandLine.arguments
if arguments.count == 2, arguments[1] == "--discover" {
    // udev enumeration of the emulated machine: which devices become keyboard sources.
    final class Registry: SourceRegistry {
        let added = Mutex<[String]>([])
        func add(_ source: any SensorSource) {
            let keyboard = (source as? KeyboardSource)?.keyboard
            added.withLock { $0.append("\(source.descriptor.source) \(keyboard?.devnode ?? "") \(keyboard?.name ?? "")") }
        }
        func remove(source: String) { added.withLock { $0.append("removed \(source)") } }
    }
    let registry = Registry()
    do {
        let discovery = try KeyboardDiscovery.start(
            registry: registry, settings: KeyboardSettings(), clock: LinuxSystemClock(), journal: .discard)
        discovery.stop()
    } catch {
        print("failed \(error)")
        exit(1)
    }
    registry.added.withLock { print($0.joined(separator: "\n")) }
    exit(0)
}
let throughSource = arguments.count > 1 && arguments[1] == "--source"
if throughSource { arguments.remove(at: 1) }
guard arguments.count == 3, let wanted = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: keyboard-evdev-child [--source] DEVNODE PRESSES\n".utf8))
    exit(2)
}
if throughSource {
    let delivered = Mutex<[SourceEvent]>([])
    let source = KeyboardSource(
        keyboard: KeyboardDevice(devnode: arguments[1], identity: "test", name: "test"),
        settings: KeyboardSettings(intervalNanoseconds: 1_000_000_000), clock: LinuxSystemClock())
    source.setRecording(true) { event in delivered.withLock { $0.append(event) } }
    print("status \(source.captureStatus.map(String.init(describing:)) ?? "none")")
    func sum(_ column: Int) -> Int64 {
        delivered.withLock { events in
            events.reduce(0) { total, event in
                guard case .samples(let batch) = event else { return total }
                return total + batch.columns[column].reduce(0, +)
            }
        }
    }
    let deadline = Date().addingTimeInterval(10)
    while sum(1) < wanted, Date() < deadline { usleep(50_000) }
    source.setRecording(false) { _ in }
    let (batches, gaps) = delivered.withLock { events in
        (
            events.filter { if case .samples = $0 { true } else { false } }.count,
            events.compactMap { if case .gap(_, _, let reason, let why) = $0 { "\(reason) \(why)" } else { nil } }
        )
    }
    print("taps \(sum(1)) deletes \(sum(2)) words \(sum(3)) characters \(sum(4)) several intervals \(batches >= 3)")
    print("gaps \(gaps.count)" + gaps.map { ": \($0)" }.joined())
    exit(0)
}
do {
    let device = try EvdevDevice(path: arguments[1])
    print("name \(device.name) typing \(device.isTypingKeyboard)")
    var meter = KeyboardMeter(start: 0, intervalLength: 3600 * 1_000_000_000)
    var presses = 0
    var lastTime: Int64 = 0
    let deadline = Date().addingTimeInterval(10)
    reading: while presses < wanted, Date() < deadline {
        _ = try SystemCalls.poll(device.fileDescriptor, events: Int16(POLLIN), timeoutMilliseconds: 200)
        let end = device.drain(
            { event in
                guard event.type == EvdevDevice.keyEvent, let action = KeyAction(evdevValue: event.value) else { return }
                lastTime = event.time
                _ = meter.record(KeyClass(evdevCode: event.code), action, at: event.time)
                if action == .press { presses += 1 }
            }, lost: { _ = meter.eventsLost(at: lastTime) })
        if case .gone(let error) = end {
            print("gone \(error)")
            break reading
        }
    }
    let counts = meter.finish(at: lastTime).counts
    print(
        "taps \(counts.taps) deletes \(counts.deletes) words \(counts.words) characters \(counts.characters)"
            + " episodes \(counts.episodes) pauses \(counts.pauses) typing \(counts.typingNanoseconds / 1_000_000) ms"
            + " overflows \(counts.overflows)")
} catch {
    print("failed \(error)")
    exit(1)
}
