import CWayland
import CWaylandProtocols
import Glibc
import SensorSystem

/// libwayland-client and the two wlr protocols' generated glue, wrapped in this one file: a
/// connection to a compositor that binds `zwlr_foreign_toplevel_manager_v1` and
/// `zwlr_output_power_manager_v1` (a power object per `wl_output`) and turns their events into
/// `WaylandMessage`s. Window titles are never read: the `title` callback ignores its argument.
///
/// Not thread-safe, like the `wl_display` under it: one thread at a time. The watcher makes it
/// on the caller's thread, then only its own queue touches it.
final class WaylandConnection {
    /// What the protocol said, as plain values; the trackers make sense of them.
    enum Message: Equatable {
        case toplevel(ToplevelTracker.Event)
        /// A `zwlr_output_power_v1.mode`'s raw value for a named output.
        case power(output: String, mode: UInt32)
        /// The output left, or its power object failed.
        case outputGone(output: String)
        /// The compositor stopped the toplevel list (`finished`) or withdrew a manager.
        case finished
    }

    private struct Output {
        let proxy: OpaquePointer
        let version: UInt32
        /// `wl_output.name` (version 4) when the compositor sends it, else `output-<global name>`.
        var name: String
        var power: OpaquePointer?
    }

    static let toplevelManagerVersion: UInt32 = 3
    static let outputVersion: UInt32 = 4
    /// An output name is the compositor's (a connector such as `HEADLESS-1`); the same bound as
    /// an app id keeps a hostile one short.
    static let maximumOutputNameBytes = AppIdentifier.maximumBytes
    /// A compositor offers a few dozen globals; a hostile one could offer them without end.
    static let maximumGlobals = 4096

    let displayName: String
    private let display: OpaquePointer
    private let registry: OpaquePointer
    private var toplevelManager: OpaquePointer?
    private var powerManager: OpaquePointer?
    private var globals: [UInt32: (interface: String, version: UInt32)] = [:]
    private var outputs: [UInt32: Output] = [:]  // by registry name
    private var outputByProxy: [UInt32: UInt32] = [:]  // wl_output proxy id → registry name
    private var outputByPower: [UInt32: UInt32] = [:]  // power proxy id → registry name
    private var handles: [UInt32: OpaquePointer] = [:]  // toplevel handles by proxy id
    private var syncDone = false
    private var bound = false
    private var disconnected = false
    private let listeners: Listeners
    /// Where messages go, in protocol order, while `dispatch` or `roundtrip` runs.
    var sink: (Message) -> Void = { _ in }

    /// `wl_display_connect(name)`: `name` is a socket name in `XDG_RUNTIME_DIR` or an absolute
    /// path; `nil` reads `WAYLAND_DISPLAY` and refuses when it is unset (libwayland would guess
    /// `wayland-0`). Does not block beyond the socket's `connect`.
    init(displayName name: String?) throws(CompositorError) {
        guard let resolved = name ?? Self.environmentDisplay() else { throw .noDisplay }
        guard let display = wl_display_connect(resolved) else {
            throw .cannotConnect(display: resolved, errno: errno)
        }
        guard let registry = wl_display_get_registry(display) else {
            wl_display_disconnect(display)
            throw .noAnswer(display: resolved)
        }
        self.displayName = resolved
        self.display = display
        self.registry = registry
        self.listeners = Listeners()
        wl_registry_add_listener(registry, listeners.registry, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        disconnect()
        listeners.deallocate()
    }

    private static func environmentDisplay() -> String? {
        guard let value = getenv("WAYLAND_DISPLAY"), value.pointee != 0 else { return nil }
        return String(cString: value)
    }

    /// The socket to watch for readability.
    var fileDescriptor: Int32 { wl_display_get_fd(display) }

    /// Binds the two managers and every output after the first round trip told which globals
    /// exist; throws when a manager is missing. Later outputs are bound as they appear.
    func bindManagers() throws(CompositorError) {
        let offered = globals
        guard let toplevel = offered.first(where: { $0.value.interface == "zwlr_foreign_toplevel_manager_v1" }) else {
            throw .protocolNotOffered(interface: "zwlr_foreign_toplevel_manager_v1")
        }
        guard let power = offered.first(where: { $0.value.interface == "zwlr_output_power_manager_v1" }) else {
            throw .protocolNotOffered(interface: "zwlr_output_power_manager_v1")
        }
        let data = Unmanaged.passUnretained(self).toOpaque()
        let toplevelVersion = min(toplevel.value.version, Self.toplevelManagerVersion)
        let manager = OpaquePointer(
            wl_registry_bind(registry, toplevel.key, cwp_foreign_toplevel_manager_interface(), toplevelVersion))
        zwlr_foreign_toplevel_manager_v1_add_listener(manager, listeners.toplevelManager, data)
        toplevelManager = manager
        powerManager = OpaquePointer(wl_registry_bind(registry, power.key, cwp_output_power_manager_interface(), 1))
        bound = true
        for (name, global) in offered.sorted(by: { $0.key < $1.key }) where global.interface == "wl_output" {
            bindOutput(name: name, version: global.version)
        }
    }

    /// A `wl_display_sync` round trip, bounded: every event the compositor sent before answering
    /// is dispatched to `sink`. Throws when it does not answer within `timeoutMilliseconds` or the
    /// connection breaks.
    func roundtrip(timeoutMilliseconds: Int32) throws(CompositorError) {
        guard let callback = wl_display_sync(display) else { throw .noAnswer(display: displayName) }
        defer { wl_callback_destroy(callback) }
        syncDone = false
        wl_callback_add_listener(callback, listeners.sync, Unmanaged.passUnretained(self).toOpaque())
        let deadline = Self.monotonicMilliseconds() + Int64(timeoutMilliseconds)
        while !syncDone {
            let remaining = deadline - Self.monotonicMilliseconds()
            guard remaining > 0, readAndDispatch(waitMilliseconds: Int32(clamping: remaining)) else {
                throw .noAnswer(display: displayName)
            }
        }
    }

    /// Reads what the socket holds and dispatches it to `sink`, waiting up to `waitMilliseconds`
    /// for data (0: the caller knows it is readable). False when the connection is broken.
    func readAndDispatch(waitMilliseconds: Int32 = 0) -> Bool {
        while wl_display_prepare_read(display) != 0 {
            guard wl_display_dispatch_pending(display) >= 0 else { return false }
        }
        if wl_display_flush(display) < 0 && errno != EAGAIN {
            wl_display_cancel_read(display)
            return false
        }
        if waitMilliseconds > 0 && syncDone {
            // The round trip's answer was already queued and dispatched above: nothing to wait for.
            wl_display_cancel_read(display)
            return true
        }
        if waitMilliseconds > 0 {
            let ready = (try? SystemCalls.poll(fileDescriptor, events: Int16(POLLIN), timeoutMilliseconds: waitMilliseconds)) ?? 0
            if ready == 0 {
                wl_display_cancel_read(display)
                return true
            }
        }
        guard wl_display_read_events(display) >= 0 else { return false }
        guard wl_display_dispatch_pending(display) >= 0 else { return false }
        return wl_display_flush(display) >= 0 || errno == EAGAIN
    }

    /// Destroys every object and closes the socket; idempotent.
    func disconnect() {
        guard !disconnected else { return }
        disconnected = true
        for handle in handles.values { zwlr_foreign_toplevel_handle_v1_destroy(handle) }
        handles = [:]
        for output in outputs.values { destroy(output) }
        outputs = [:]
        if let manager = toplevelManager { zwlr_foreign_toplevel_manager_v1_destroy(manager) }
        if let manager = powerManager { zwlr_output_power_manager_v1_destroy(manager) }
        wl_registry_destroy(registry)
        wl_display_disconnect(display)
    }

    private static func monotonicMilliseconds() -> Int64 { LinuxSystemClock.read(CLOCK_MONOTONIC) / 1_000_000 }

    // MARK: registry and outputs

    fileprivate func onGlobal(name: UInt32, interface: UnsafePointer<CChar>?, version: UInt32) {
        guard let interface, globals.count < Self.maximumGlobals else { return }
        let text = String(cString: interface)
        globals[name] = (text, version)
        if bound && text == "wl_output" { bindOutput(name: name, version: version) }
    }

    fileprivate func onGlobalRemove(name: UInt32) {
        guard let global = globals.removeValue(forKey: name) else { return }
        switch global.interface {
        case "wl_output":
            guard let output = outputs.removeValue(forKey: name) else { return }
            destroy(output)
            sink(.outputGone(output: output.name))
        case "zwlr_foreign_toplevel_manager_v1", "zwlr_output_power_manager_v1":
            if bound { sink(.finished) }
        default: break
        }
    }

    private func bindOutput(name: UInt32, version: UInt32) {
        guard outputs[name] == nil, outputs.count < OutputPowerTracker.maximumOutputs else { return }
        let bindVersion = min(version, Self.outputVersion)
        guard let raw = wl_registry_bind(registry, name, cwl_output_interface(), bindVersion) else { return }
        let proxy = OpaquePointer(raw)
        let data = Unmanaged.passUnretained(self).toOpaque()
        wl_output_add_listener(proxy, listeners.output, data)
        var output = Output(proxy: proxy, version: bindVersion, name: "output-\(name)")
        outputByProxy[wl_proxy_get_id(proxy)] = name
        if let manager = powerManager, let power = zwlr_output_power_manager_v1_get_output_power(manager, proxy) {
            zwlr_output_power_v1_add_listener(power, listeners.power, data)
            outputByPower[wl_proxy_get_id(power)] = name
            output.power = power
        }
        outputs[name] = output
    }

    private func destroy(_ output: Output) {
        if let power = output.power {
            outputByPower[wl_proxy_get_id(power)] = nil
            zwlr_output_power_v1_destroy(power)
        }
        outputByProxy[wl_proxy_get_id(output.proxy)] = nil
        if output.version >= 3 { wl_output_release(output.proxy) } else { wl_output_destroy(output.proxy) }
    }

    fileprivate func onOutputName(_ proxy: OpaquePointer?, _ name: UnsafePointer<CChar>?) {
        guard let proxy, let name, let key = outputByProxy[wl_proxy_get_id(proxy)] else { return }
        let length = strnlen(name, Self.maximumOutputNameBytes + 1)
        let bytes = UnsafeRawBufferPointer(start: name, count: length)
        if let valid = AppIdentifier.validated(bytes), !valid.isEmpty { outputs[key]?.name = valid }
    }

    fileprivate func onPowerMode(_ power: OpaquePointer?, mode: UInt32) {
        guard let power, let key = outputByPower[wl_proxy_get_id(power)], let output = outputs[key] else { return }
        sink(.power(output: output.name, mode: mode))
    }

    fileprivate func onPowerFailed(_ power: OpaquePointer?) {
        guard let power, let key = outputByPower.removeValue(forKey: wl_proxy_get_id(power)) else { return }
        zwlr_output_power_v1_destroy(power)
        outputs[key]?.power = nil
        if let output = outputs[key] { sink(.outputGone(output: output.name)) }
    }

    // MARK: toplevels

    fileprivate func onToplevel(_ handle: OpaquePointer?) {
        guard let handle else { return }
        guard handles.count < ToplevelTracker.maximumToplevels else {
            zwlr_foreign_toplevel_handle_v1_destroy(handle)
            return
        }
        let id = wl_proxy_get_id(handle)
        handles[id] = handle
        zwlr_foreign_toplevel_handle_v1_add_listener(handle, listeners.toplevel, Unmanaged.passUnretained(self).toOpaque())
        sink(.toplevel(.created(handle: id)))
    }

    fileprivate func onAppID(_ handle: OpaquePointer?, _ appID: UnsafePointer<CChar>?) {
        guard let handle, let appID else { return }
        let length = strnlen(appID, AppIdentifier.maximumBytes + 1)
        let id = AppIdentifier.validated(UnsafeRawBufferPointer(start: appID, count: length)) ?? ""
        sink(.toplevel(.appID(handle: wl_proxy_get_id(handle), id)))
    }

    fileprivate func onState(_ handle: OpaquePointer?, _ array: UnsafeMutablePointer<wl_array>?) {
        guard let handle, let array else { return }
        let bytes = UnsafeRawBufferPointer(start: array.pointee.data, count: array.pointee.size)
        guard let activated = ToplevelStates.isActivated(bytes) else { return }
        sink(.toplevel(.activated(handle: wl_proxy_get_id(handle), activated)))
    }

    fileprivate func onDone(_ handle: OpaquePointer?) {
        guard let handle else { return }
        sink(.toplevel(.done(handle: wl_proxy_get_id(handle))))
    }

    fileprivate func onClosed(_ handle: OpaquePointer?) {
        guard let handle else { return }
        let id = wl_proxy_get_id(handle)
        guard handles.removeValue(forKey: id) != nil else { return }
        zwlr_foreign_toplevel_handle_v1_destroy(handle)
        sink(.toplevel(.closed(handle: id)))
    }

    fileprivate func onFinished() {
        if let manager = toplevelManager {
            zwlr_foreign_toplevel_manager_v1_destroy(manager)
            toplevelManager = nil
        }
        sink(.finished)
    }

    fileprivate func onSyncDone() { syncDone = true }
}

/// The C listener tables, one per connection, alive as long as it is (libwayland keeps the
/// pointers). Every entry is set: libwayland calls an event's entry without checking it.
private struct Listeners {
    let registry = UnsafeMutablePointer<wl_registry_listener>.allocate(capacity: 1)
    let sync = UnsafeMutablePointer<wl_callback_listener>.allocate(capacity: 1)
    let output = UnsafeMutablePointer<wl_output_listener>.allocate(capacity: 1)
    let power = UnsafeMutablePointer<zwlr_output_power_v1_listener>.allocate(capacity: 1)
    let toplevelManager = UnsafeMutablePointer<zwlr_foreign_toplevel_manager_v1_listener>.allocate(capacity: 1)
    let toplevel = UnsafeMutablePointer<zwlr_foreign_toplevel_handle_v1_listener>.allocate(capacity: 1)

    init() {
        registry.initialize(
            to: wl_registry_listener(
                global: { data, _, name, interface, version in
                    connection(data).onGlobal(name: name, interface: interface, version: version)
                },
                global_remove: { data, _, name in connection(data).onGlobalRemove(name: name) }))
        sync.initialize(to: wl_callback_listener(done: { data, _, _ in connection(data).onSyncDone() }))
        output.initialize(
            to: wl_output_listener(
                geometry: { _, _, _, _, _, _, _, _, _, _ in },
                mode: { _, _, _, _, _, _ in },
                done: { _, _ in },
                scale: { _, _, _ in },
                name: { data, proxy, name in connection(data).onOutputName(proxy, name) },
                description: { _, _, _ in }))
        power.initialize(
            to: zwlr_output_power_v1_listener(
                mode: { data, power, mode in connection(data).onPowerMode(power, mode: mode) },
                failed: { data, power in connection(data).onPowerFailed(power) }))
        toplevelManager.initialize(
            to: zwlr_foreign_toplevel_manager_v1_listener(
                toplevel: { data, _, handle in connection(data).onToplevel(handle) },
                finished: { data, _ in connection(data).onFinished() }))
        toplevel.initialize(
            to: zwlr_foreign_toplevel_handle_v1_listener(
                title: { _, _, _ in },  // the title is never read: it may hold a message, a URL or a name
                app_id: { data, handle, appID in connection(data).onAppID(handle, appID) },
                output_enter: { _, _, _ in },
                output_leave: { _, _, _ in },
                state: { data, handle, state in connection(data).onState(handle, state) },
                done: { data, handle in connection(data).onDone(handle) },
                closed: { data, handle in connection(data).onClosed(handle) },
                parent: { _, _, _ in }))
    }

    func deallocate() {
        registry.deallocate()
        sync.deallocate()
        output.deallocate()
        power.deallocate()
        toplevelManager.deallocate()
        toplevel.deallocate()
    }
}

/// The connection a listener's `data` points at (set with `Unmanaged.passUnretained`; the
/// connection outlives every proxy it made).
private func connection(_ data: UnsafeMutableRawPointer?) -> WaylandConnection {
    Unmanaged<WaylandConnection>.fromOpaque(data!).takeUnretainedValue()
}
