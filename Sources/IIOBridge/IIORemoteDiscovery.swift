import Dispatch
import SensorKitModel
import SensorSystem

/// Lab rigs' `iiod` servers (`[iio] remote = ip:host[:port]` in the configuration), recorded like
/// local devices: each rig's devices are described through libiio, classified like sysfs ones,
/// and their buffered functions registered as sources sharing one `IIORemoteCapture` per chip.
/// Source ids name the rig (`iio:bmi160@ip:rig.local/iio:device0`).
///
/// A rig that cannot be reached is retried every `retryInterval`, with one log line when it goes
/// and one when it comes back; when a connection drops, its sources are removed (the pipeline
/// records the absence as a deletion record once they return). Polled functions (step counters,
/// simple light sensors) are not read over the network. All of it runs on `queue`; libiio calls
/// block on the network, never on a capture's reading queue or thread.
public final class IIORemoteDiscovery: @unchecked Sendable {
    // @unchecked: `rigs` and `stopped` are touched only on `queue` (dispatchPrecondition).
    public struct Options: Sendable {
        public var uris: [String]
        public var clock: any SystemClock
        public var log: Journal
        public var retryInterval: DispatchTimeInterval
        public var timeoutMilliseconds: UInt32

        public init(
            uris: [String], clock: any SystemClock, log: Journal, retryInterval: DispatchTimeInterval = .seconds(5),
            timeoutMilliseconds: UInt32 = 5_000
        ) {
            self.uris = uris
            self.clock = clock
            self.log = log
            self.retryInterval = retryInterval
            self.timeoutMilliseconds = timeoutMilliseconds
        }
    }

    public let queue = DispatchQueue(label: "sensorkitd.iio.remote")
    private let registry: any SourceRegistry
    private let options: Options

    private struct Rig {
        var context: IIORemoteContext?
        var captures: [IIORemoteCapture] = []
        var sourceIDs: [String] = []
        var failing = false
        /// Bumped on every (re)connection, so a stale loss report is ignored.
        var generation = 0
    }
    private var rigs: [String: Rig] = [:]
    private var stopped = false

    public init(registry: any SourceRegistry, options: Options) {
        self.registry = registry
        self.options = options
    }

    /// Starts connecting to every rig (asynchronously; never blocks the caller).
    public func start() {
        queue.async { [self] in
            for uri in options.uris { rigs[uri] = Rig() }
            for uri in options.uris { connect(uri) }
        }
    }

    /// Stops reconnecting and retires every capture (iiod turns the rigs' buffers off); waits.
    public func stop() {
        let captures: [IIORemoteCapture] = queue.sync {
            stopped = true
            return rigs.values.flatMap(\.captures)
        }
        for capture in captures {
            capture.retire()
            capture.settle()
        }
    }

    /// The source ids registered per rig (tests, diagnostics).
    public var sources: [String: [String]] { queue.sync { rigs.mapValues(\.sourceIDs) } }

    private func connect(_ uri: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !stopped, var rig = rigs[uri], rig.context == nil else { return }
        let context: IIORemoteContext
        do throws(SystemError) {
            context = try IIORemoteContext(uri: uri, timeoutMilliseconds: options.timeoutMilliseconds)
        } catch {
            if !rig.failing {
                options.log.warning("remote IIO \(uri): \(error); retrying every \(Self.describe(options.retryInterval))")
            }
            rig.failing = true
            rigs[uri] = rig
            queue.asyncAfter(deadline: .now() + options.retryInterval) { [weak self] in self?.connect(uri) }
            return
        }
        if rig.failing { options.log.notice("remote IIO \(uri): reachable again") }
        rig.failing = false
        rig.context = context
        rig.generation += 1
        let generation = rig.generation
        var sources: [any SensorSource] = []
        for model in context.devices() {
            let description: IIODeviceDescription
            do throws(IIOAttributeError) {
                description = try model.describe()
            } catch {
                options.log.warning("remote IIO \(uri): \(error), skipping device")
                continue
            }
            let udev = UdevIIODevice(syspath: uri + "/" + model.id, sysname: model.id, devnode: nil, properties: [:])
            let chip: IIOChip
            do throws(ScanLayoutError) {
                chip = try IIOChip(udev: udev, description: description)
            } catch {
                options.log.warning("remote IIO \(uri) \(model.id): \(error), skipping device")
                continue
            }
            for problem in chip.problems { options.log.warning("remote IIO \(uri): \(problem)") }
            let polled = chip.functions.filter { $0.capture == .polled }
            if !polled.isEmpty {
                options.log.info(
                    "remote IIO \(uri) \(model.id) (\(model.name)): \(polled.map(\.kind.rawValue).joined(separator: ", ")) would need sysfs polling over the network, not recorded"
                )
            }
            guard let plan = chip.capturePlan else { continue }
            let capture = IIORemoteCapture(
                context: context, deviceID: model.id, plan: plan, clock: options.clock, log: options.log
            ) {
                [weak self] why in
                guard let self else { return }
                queue.async { self.lost(uri, generation: generation, why: why) }
            }
            rig.captures.append(capture)
            for function in plan.functions {
                var descriptor = chip.descriptor(for: function)
                descriptor.details["remote"] = uri
                descriptor.details["timestamps"] =
                    plan.layout.timestamp == nil
                    ? TimestampMapping.estimated.description : IIORemoteCapture.timestampsDetail
                sources.append(IIOBufferedSource(chip: chip, function: function, capture: capture, descriptor: descriptor))
            }
            options.log.info(
                "remote IIO \(uri) \(model.id) (\(model.name)): \(plan.functions.map(\.description).joined(separator: ", "))")
        }
        rig.sourceIDs = Array(Set(sources.map(\.descriptor.source))).sorted()
        rigs[uri] = rig
        for source in sources { registry.add(source) }
    }

    /// A capture's connection failed: drop the rig's sources and context, reconnect later.
    private func lost(_ uri: String, generation: Int, why: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard var rig = rigs[uri], rig.generation == generation, rig.context != nil else { return }
        options.log.warning("remote IIO \(uri): connection lost (\(why)); its sources are gone until it is back")
        for capture in rig.captures { capture.retire() }
        for id in rig.sourceIDs { registry.remove(source: id) }
        rig = Rig(failing: true, generation: rig.generation)
        rigs[uri] = rig
        queue.asyncAfter(deadline: .now() + options.retryInterval) { [weak self] in self?.connect(uri) }
    }

    static func describe(_ interval: DispatchTimeInterval) -> String {
        switch interval {
        case let .seconds(value): "\(value) s"
        case let .milliseconds(value): "\(value) ms"
        default: "\(interval)"
        }
    }
}
