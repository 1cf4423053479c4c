import Dispatch
import Foundation
import Glibc
import WaylandBridge

// The half of WaylandBridgeTests that runs as a process of its own, so that everything a watcher
// writes — its output and its errors — can be searched for a window title fed to the compositor.
// Prints each event on a line ("foreground APP|-", "power OUTPUT on|off", "gone"), exits after
// `gone`; a watcher that cannot start prints "error: SENTENCE" and exits 1.
//
//     compositor-watch-child [DISPLAY]      (no DISPLAY: WAYLAND_DISPLAY)

/// One line, written at once (a pipe would otherwise hold it in stdio's buffer).
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

let arguments = CommandLine.arguments
let queue = DispatchQueue(label: "compositor-watch-child")
let watcher: CompositorWatcher
do {
    watcher = try CompositorWatcher(displayName: arguments.count > 1 ? arguments[1] : nil, queue: queue) { event in
        switch event {
        case .foreground(let appID, _): say("foreground \(appID ?? "-")")
        case .outputPower(let output, let on, _): say("power \(output) \(on ? "on" : "off")")
        case .gone:
            say("gone")
            exit(0)
        }
    }
} catch {
    say("error: \(error)")
    exit(1)
}
withExtendedLifetime(watcher) { dispatchMain() }
