import Dispatch
import SensorKitModel
import SensorSystem
import Udev

/// Finds typing keyboards through udev (`input` subsystem, `ID_INPUT_KEYBOARD=1`, an
/// `eventN` node) as they come and go, and keeps one `KeyboardSource` per keyboard in the
/// registry. Power buttons, lid switches and media remotes have keys but are no keyboards
/// (udev's `input_id` sets `ID_INPUT_KEYBOARD` only with the letter and digit keys).
public final class KeyboardDiscovery: @unchecked Sendable {
    // @unchecked: every field but the constants is touched only on `queue`.
    public let queue = DispatchQueue(label: "sensorkitd.keyboard-discovery")
    private let registry: any SourceRegistry
    private let settings: KeyboardSettings
    private let clock: any SystemClock
    private let journal: Journal
    /// Source identity by syspath, for the keyboards registered now.
    private var present: [String: String] = [:]
    private var monitor: UdevMonitor?
    private var eventSource: (any DispatchSourceRead)?
    private var stopped = false

    /// A discovery that learns about devices only through `handle(_:)` (tests); `start` adds udev.
    public init(registry: any SourceRegistry, settings: KeyboardSettings, clock: any SystemClock, journal: Journal) {
        self.registry = registry
        self.settings = settings
        self.clock = clock
        self.journal = journal
    }

    /// Starts udev discovery: monitor, then enumeration, then events.
    public static func start(
        registry: any SourceRegistry, settings: KeyboardSettings, clock: any SystemClock, journal: Journal
    ) throws(SystemError) -> KeyboardDiscovery {
        let discovery = KeyboardDiscovery(registry: registry, settings: settings, clock: clock, journal: journal)
        let result: Result<Void, SystemError> = discovery.queue.sync {
            do throws(SystemError) {
                let monitor = try UdevMonitor(subsystem: "input", queue: discovery.queue) { $0.hasPrefix("event") }
                discovery.monitor = monitor
                discovery.eventSource = try monitor.follow { [weak discovery] devices in discovery?.process(devices) }
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
        return discovery
    }

    /// Handles devices found or events received (asynchronously, on `queue`).
    public func handle(_ devices: [UdevDevice]) {
        queue.async { [self] in process(devices) }
    }

    /// Stops listening and removes every keyboard's source (which delivers its interval so far).
    public func stop() {
        let identities: [String] = queue.sync {
            stopped = true
            eventSource?.cancel()
            eventSource = nil
            monitor = nil
            defer { present = [:] }
            return Array(present.values)
        }
        for identity in identities { registry.remove(source: identity) }
    }

    /// The keyboard a udev device is, or nil when it is not a typing keyboard with a node.
    /// `name` is the parent input device's `name` attribute (the event node has none).
    public static func keyboard(_ device: UdevDevice, name: String?) -> KeyboardDevice? {
        guard device.properties["ID_INPUT_KEYBOARD"] == "1", let devnode = device.devnode,
            devnode.hasPrefix("/dev/input/event")
        else { return nil }
        let path = device.properties["ID_PATH"].flatMap { $0.isEmpty ? nil : $0 }
        return KeyboardDevice(
            devnode: devnode, identity: path ?? device.syspath,
            name: name.flatMap { $0.isEmpty ? nil : String($0.prefix(128)) } ?? device.sysname)
    }

    private func process(_ devices: [UdevDevice]) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !stopped else { return }
        for device in devices {
            switch device.action {
            case nil, .add?, .change?:
                guard present[device.syspath] == nil,
                    var keyboard = Self.keyboard(device, name: SystemFiles.readTrimmed(device.syspath + "/device/name"))
                else { continue }
                // Two nodes on one port (a keyboard with two interfaces) keep apart by syspath.
                if present.values.contains("evdev:" + keyboard.identity) { keyboard.identity = device.syspath }
                let source = KeyboardSource(keyboard: keyboard, settings: settings, clock: clock)
                present[device.syspath] = source.descriptor.source
                journal.info("keyboard: \(keyboard.name) at \(keyboard.devnode) (\(keyboard.identity))")
                registry.add(source)
            case .remove?:
                guard let identity = present.removeValue(forKey: device.syspath) else { continue }
                journal.info("keyboard: \(identity) removed")
                registry.remove(source: identity)
            case .other?:
                continue
            }
        }
    }
}
