import Dispatch
import Glibc
import SensorKitModel
import SensorSystem

/// Finds IIO devices and keeps the recording pipeline's sources current (docs/iio.md §2,
/// §12.7): the udev monitor is created and listening **before** the enumeration, so a device that
/// appears meanwhile is seen at least once (events are de-duplicated by syspath); then
///
/// - `add` (or found by enumeration): describe the device from sysfs, classify it by its channels
///   (`IIOChip`), register one source per function — buffered sources of a chip sharing one
///   `IIODeviceCapture` — and log one line per problem (garbage in sysfs skips or degrades the
///   device, it never stops the daemon);
/// - `change`: describe it again (a range switch changes the scale, someone changed the rate);
///   when a stream's descriptor changed, its sources are replaced, so the new scale or rate is
///   the new stream's metadata;
/// - `remove`: the sources are removed (the pipeline records the gap if the device comes back
///   while recording) and the capture retired.
///
/// All of it runs on `queue`, never on a reading thread: describing a device reads sysfs, which may
/// block. Devices named in `Options.ignored` (by `iio:deviceN`, syspath or part name) are left
/// alone.
public final class IIODiscovery: @unchecked Sendable {
    // @unchecked: `entries`, `controlQueues`, `monitor`, `eventSource` and `stopped` are touched
    // only on `queue` (dispatchPrecondition).
    public struct Options: Sendable {
        public var ignored: [String]
        public var clock: any SystemClock
        public var log: Journal
        /// Where trigger directories (`triggerN/name`) are listed.
        public var triggersRoot: String
        public var polling: IIOChip.Polling
        public var pairing: ClockPairing
        public var restartDelay: DispatchTimeInterval
        /// `[sensor NAME] rate` (Hz): written before the buffer is enabled, or the polling rate.
        public var rates: [SRSensor: Double]
        /// How long a buffered chip's read scans may wait to be handed over together
        /// (`IIODeviceCapture`): the default saves wake-ups; 0 hands each read over at once, for
        /// live subscribers (the lab profile, docs/live.md).
        public var deliveryHold: Int64 = IIODeviceCapture.defaultDeliveryHold

        public init(
            ignored: [String] = [], clock: any SystemClock, log: Journal, triggersRoot: String = "/sys/bus/iio/devices",
            polling: IIOChip.Polling = .init(), pairing: ClockPairing = .system,
            restartDelay: DispatchTimeInterval = .seconds(1), rates: [SRSensor: Double] = [:]
        ) {
            self.rates = rates
            self.ignored = ignored
            self.clock = clock
            self.log = log
            self.triggersRoot = triggersRoot
            self.polling = polling
            self.pairing = pairing
            self.restartDelay = restartDelay
        }
    }

    public let queue = DispatchQueue(label: "sensorkitd.iio.discovery")
    private let registry: any SourceRegistry
    private let options: Options

    private struct Entry {
        let chip: IIOChip
        let capture: IIODeviceCapture?
        let polled: [IIOPolledSource]
        let descriptors: [SourceDescriptor]
    }
    private var entries: [String: Entry] = [:]
    /// One control queue per sysfs path, kept across captures of the same path (see `IIODeviceCapture`).
    private var controlQueues: [String: DispatchQueue] = [:]
    /// Devices whose buffer could not be enabled, with the reason: polled until removed.
    private var refusedBuffers: [String: String] = [:]
    private var monitor: UdevIIOMonitor?
    private var eventSource: (any DispatchSourceRead)?
    private var stopped = false

    /// A discovery that learns about devices only through `handle(_:)` (tests); `start` adds udev.
    public init(registry: any SourceRegistry, options: Options) {
        self.registry = registry
        self.options = options
    }

    /// Starts udev discovery: monitor, then enumeration, then events. Throws when libudev cannot
    /// make a monitor; blocks while the present devices are described.
    public static func start(registry: any SourceRegistry, options: Options) throws(SystemError) -> IIODiscovery {
        let discovery = IIODiscovery(registry: registry, options: options)
        let result: Result<Void, SystemError> = discovery.queue.sync {
            do throws(SystemError) {
                let monitor = try UdevIIOMonitor(queue: discovery.queue)
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
    public func handle(_ devices: [UdevIIODevice]) {
        queue.async { [self] in process(devices) }
    }

    /// Stops listening, retires every capture (buffers off) and closes polled sources (a step
    /// counter we enabled is disabled again); waits for both, so nothing is left on at exit.
    public func stop() {
        let (captures, polled): ([IIODeviceCapture], [IIOPolledSource]) = queue.sync {
            stopped = true
            eventSource?.cancel()
            eventSource = nil
            monitor = nil
            return (entries.values.compactMap(\.capture), entries.values.flatMap(\.polled))
        }
        for capture in captures { capture.retire() }
        for source in polled { source.close() }
        for capture in captures { capture.settle() }
        for source in polled { source.settle() }
    }

    /// The chips currently known, by syspath (tests, diagnostics).
    public var chips: [String: IIOChip] { queue.sync { entries.mapValues(\.chip) } }

    // MARK: Queue

    private func process(_ devices: [UdevIIODevice]) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !stopped else { return }
        for device in devices {
            switch device.action {
            case nil, .add?:
                if entries[device.syspath] != nil { changed(device) } else { added(device) }
            case .change?:
                changed(device)
            case .remove?:
                removed(device.syspath, why: "removed")
            case let .other(action)?:
                options.log.debug("\(device.sysname): uevent \(action), ignoring")
            }
        }
    }

    private func added(_ device: UdevIIODevice) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !isIgnored(device.sysname) && !isIgnored(device.syspath) else {
            options.log.info("\(device.sysname): ignored by the configuration ([iio] ignore)")
            return
        }
        guard let chip = examine(device) else { return }
        guard !isIgnored(chip.description.name) else {
            options.log.info("\(device.sysname) (\(chip.description.name)): ignored by the configuration ([iio] ignore)")
            return
        }
        for problem in chip.problems { options.log.warning("\(problem)") }
        guard !chip.functions.isEmpty else {
            options.log.info("\(device.sysname) (\(chip.description.name)): no channels sensorkitd records, ignoring")
            return
        }
        register(chip, reusing: nil)
        options.log.info(
            "\(device.sysname) (\(chip.description.name)) at \(device.syspath): \(chip.functions.map(\.description).joined(separator: ", "))"
        )
    }

    private func changed(_ device: UdevIIODevice) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let old = entries[device.syspath] else { return added(device) }
        // A change may have given a refused buffer what it lacked (an administrator selected a
        // trigger, a driver was reloaded): try the buffer again. Refused again, it is polled again
        // with one more line.
        if refusedBuffers.removeValue(forKey: device.syspath) != nil {
            options.log.notice("\(device.sysname) (\(old.chip.description.name)): change uevent; trying its buffer again")
        }
        guard let chip = examine(device) else {
            removed(device.syspath, why: "unusable after a change")
            return
        }
        let descriptors = chip.functions.map(chip.descriptor(for:))
        guard descriptors != old.descriptors || chip.capturePlan != old.chip.capturePlan else {
            options.log.debug("\(device.sysname): change uevent, nothing that matters changed")
            return
        }
        for problem in chip.problems where !old.chip.problems.contains(problem) { options.log.warning("\(problem)") }
        options.log.notice(
            "\(device.sysname) (\(chip.description.name)) changed: \(Self.differences(old.descriptors, descriptors)); its streams are registered anew"
        )
        registry.remove(source: old.chip.sourceID)
        for source in old.polled { source.close() }
        let keep = chip.capturePlan != nil && chip.capturePlan == old.chip.capturePlan
        if !keep { old.capture?.retire() }
        entries[device.syspath] = nil
        register(chip, reusing: keep ? old.capture : nil)
    }

    private func removed(_ syspath: String, why: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        refusedBuffers[syspath] = nil
        guard let entry = entries.removeValue(forKey: syspath) else { return }
        entry.capture?.retire()
        for source in entry.polled { source.close() }
        registry.remove(source: entry.chip.sourceID)
        options.log.notice("\(entry.chip.description.deviceName) (\(entry.chip.description.name)) \(why); its sources are gone")
    }

    /// Creates the sources of `chip` (sharing `capture` when the plan did not change) and adds them.
    private func register(_ chip: IIOChip, reusing capture: IIODeviceCapture?) {
        dispatchPrecondition(condition: .onQueue(queue))
        let syspath = chip.udev.syspath
        var capture = capture
        if capture == nil, let plan = chip.capturePlan {
            let control = controlQueues[syspath] ?? DispatchQueue(label: "sensorkitd.iio.control.\(chip.description.deviceName)")
            controlQueues[syspath] = control
            let refused = CaptureReference()
            let made = IIODeviceCapture(
                sysfs: IIOSysfsDevice(path: syspath), devnode: chip.udev.devnode ?? "/dev/" + chip.udev.sysname,
                description: chip.description, plan: plan, controlQueue: control, clock: options.clock,
                pairing: options.pairing, log: options.log, restartDelay: options.restartDelay,
                deliveryHold: options.deliveryHold,
                handOver: { [registry] body in registry.handingOver(body) },
                onEnableFailure: { [weak self] error in
                    guard let self else { return }
                    queue.async { self.bufferRefused(syspath, by: refused.capture, error) }
                })
            refused.capture = made
            capture = made
        }
        var sources: [any SensorSource] = []
        var polled: [IIOPolledSource] = []
        for function in chip.functions {
            switch function.capture {
            case .buffered:
                sources.append(IIOBufferedSource(chip: chip, function: function, capture: capture!))
            case .polled:
                let source = IIOPolledSource(chip: chip, function: function, clock: options.clock, log: options.log)
                polled.append(source)
                sources.append(source)
            }
        }
        entries[syspath] = Entry(chip: chip, capture: capture, polled: polled, descriptors: sources.map(\.descriptor))
        for source in sources { registry.add(source) }
    }

    /// The buffer of `syspath` could not be enabled: its functions are registered anew as polled
    /// (`_raw` files are readable where the buffer is not), and stay polled until the device is
    /// removed or changes (a `change` uevent tries the buffer again). The capture already logged
    /// the one line.
    private func bufferRefused(_ syspath: String, by capture: IIODeviceCapture?, _ error: BufferedCaptureError) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !stopped, let old = entries[syspath], let capture, old.capture === capture else { return }
        refusedBuffers[syspath] = "could not be enabled: \(error)"
        var udev = old.chip.udev
        udev.action = nil
        guard let chip = examine(udev) else {
            removed(syspath, why: "unusable without its buffer")
            return
        }
        registry.remove(source: old.chip.sourceID)
        for source in old.polled { source.close() }
        capture.retire()
        entries[syspath] = nil
        register(chip, reusing: nil)
    }

    /// Describes and classifies a device; nil (after one log line) when it cannot be used.
    private func examine(_ device: UdevIIODevice) -> IIOChip? {
        dispatchPrecondition(condition: .onQueue(queue))
        let sysfs = IIOSysfsDevice(path: device.syspath)
        var description: IIODeviceDescription
        do throws(IIOAttributeError) {
            description = try sysfs.describe()
        } catch {
            options.log.warning("\(error), skipping device")
            return nil
        }
        var udev = device
        udev.action = nil
        let triggers = triggerNames()
        let integration = Self.integrationTime(of: sysfs)
        let twins = earlierTwins(of: device, description)
        var rates: [IIOSensorFunction.Kind: Double] = [:]
        for kind in IIOSensorFunction.Kind.allCases { rates[kind] = options.rates[kind.sensor] }
        let refusal = refusedBuffers[device.syspath]
        if refusal != nil {
            for index in description.channels.indices { description.channels[index].scanElement = nil }
            description.bufferDirectory = nil
        }
        do throws(ScanLayoutError) {
            return try IIOChip(
                udev: udev, description: description, triggers: triggers, integrationTime: integration,
                polling: options.polling, earlierTwins: twins, configuredRates: rates, bufferRefusal: refusal)
        } catch {
            // The scan elements cannot form a layout: drop the buffer, poll what can be polled.
            description.degradations.append(
                IIOAttributeError(
                    device: description.deviceName, attribute: (description.scanElementDirectory ?? "scan_elements") + "/",
                    problem: .malformed(value: "\(error)", reason: "the scan elements cannot form a layout")))
            for index in description.channels.indices { description.channels[index].scanElement = nil }
            description.bufferDirectory = nil
            return try? IIOChip(
                udev: udev, description: description, triggers: triggers, integrationTime: integration,
                polling: options.polling, earlierTwins: twins, configuredRates: rates)
        }
    }

    /// Earlier IIO devices of the same name and label under the same parent (`IIOSourceIdentity`).
    private func earlierTwins(of device: UdevIIODevice, _ description: IIODeviceDescription) -> Int {
        guard device.syspath.hasPrefix("/"), let number = IIOSourceIdentity.deviceNumber(device.sysname) else { return 0 }
        let parent = SysfsDirectory(
            path: String(device.syspath[..<(device.syspath.lastIndex(of: "/") ?? device.syspath.endIndex)]))
        guard let names = try? parent.entries() else { return 0 }
        var siblings: [(name: String, label: String?, number: Int)] = []
        for entry in names where entry != device.sysname {
            guard let other = IIOSourceIdentity.deviceNumber(entry), other < number else { continue }
            let directory = parent.subdirectory(entry)
            guard let name = try? directory.read("name") else { continue }
            let label = (try? directory.read("label")).flatMap { $0.isEmpty ? nil : $0 }
            siblings.append((name, label, other))
        }
        return IIOSourceIdentity.earlierTwins(
            name: description.name, label: description.label, number: number, siblings: siblings)
    }

    private func isIgnored(_ name: String) -> Bool { options.ignored.contains(name) }

    /// `triggerN/name` under the triggers root (`opendir`/`readdir`, then small reads).
    private func triggerNames() -> [String] {
        let root = SysfsDirectory(path: options.triggersRoot)
        guard let names = try? root.entries() else { return [] }
        return names.filter { $0.hasPrefix("trigger") }.compactMap { try? root.subdirectory($0).read("name") }
    }

    /// The light integration time in seconds, if the device has one (`…integration_time`).
    static func integrationTime(of sysfs: IIOSysfsDevice) -> Double? {
        for name in [
            "in_illuminance_integration_time", "in_illuminance0_integration_time", "in_intensity_integration_time",
            "integration_time",
        ] {
            if let text = try? sysfs.directory.read(name), let value = try? SysfsNumber.decimal(text), value > 0 {
                return value
            }
        }
        return nil
    }

    /// "accelerometer samplingFrequency 100 Hz → 400 Hz, x scale 0.000598 → 0.001197".
    static func differences(_ old: [SourceDescriptor], _ new: [SourceDescriptor]) -> String {
        var parts: [String] = []
        for descriptor in new {
            let name = descriptor.sensor.rawValue.split(separator: ".").last.map(String.init) ?? descriptor.sensor.rawValue
            guard let before = old.first(where: { $0.sensor == descriptor.sensor }) else {
                parts.append("\(name) added")
                continue
            }
            for key in Set(before.details.keys).union(descriptor.details.keys).sorted()
            where before.details[key] != descriptor.details[key] {
                parts.append("\(name) \(key) \(before.details[key] ?? "-") → \(descriptor.details[key] ?? "-")")
            }
            for (a, b) in zip(before.columns, descriptor.columns) where a != b {
                guard case .count(let scaleA, let offsetA, _) = a.kind, case .count(let scaleB, let offsetB, _) = b.kind else {
                    parts.append("\(name) \(a.name) \(a.kind) → \(b.kind)")
                    continue
                }
                parts.append(
                    "\(name) \(a.name) scale \(scaleA) → \(scaleB)"
                        + (offsetA != offsetB ? ", offset \(offsetA) → \(offsetB)" : ""))
            }
        }
        for descriptor in old where !new.contains(where: { $0.sensor == descriptor.sensor }) {
            parts.append("\(descriptor.sensor.rawValue) gone")
        }
        return parts.isEmpty ? "capture plan" : parts.joined(separator: ", ")
    }
}

/// The capture a failure callback belongs to, set once it exists (the callback is made first).
private final class CaptureReference: @unchecked Sendable {
    // @unchecked: written once on the discovery queue before the capture can call back, then only read there.
    weak var capture: IIODeviceCapture?
}
