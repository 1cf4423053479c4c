import Foundation
import Glibc
import KeyboardBridge
import SensorSystem

// The half of KeyboardBridgeTests that runs inside `umockdev-run` (the preload must be there
// from the process's start): opens an emulated evdev node through `EvdevDevice`, reads until it
// has seen `presses` key presses (or 10 s passed), counts them with `KeyboardMeter`, and prints
// what left the reading loop: the device's name and the interval's counts, never a key code.
//
//     keyboard-evdev-child DEVNODE PRESSES

let arguments = CommandLine.arguments
guard arguments.count == 3, let wanted = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: keyboard-evdev-child DEVNODE PRESSES\n".utf8))
    exit(2)
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
