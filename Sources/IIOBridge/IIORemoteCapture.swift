import Dispatch
import Glibc
import SensorKitModel
import SensorSystem
import Synchronization

/// A chip on a lab rig, served by `iiod`, recorded like a local one: the same plan, the same
/// `ScanFanOut`, the same buffered sources. The buffer is opened through libiio when the first
/// stream subscribes and destroyed when the last leaves (iiod turns the rig's buffer on and off).
///
/// libiio's network refill blocks until its buffer is full, so the reading queue runs one loop:
/// refill (≈100 ms of scans, the plan's watermark), decode, stamp, fan out. Stopping cancels the
/// blocked refill (`iio_buffer_cancel`) and waits for the loop to end.
///
/// Timestamps: the rig's kernel clock is not ours. The first `calibrationRefills` refills are
/// held back; the offset is the smallest `local receive − last scan's stamp` among them, so the
/// best-delivered refill's last scan lands at the local boottime it arrived (late by that one
/// delivery latency, as the stream's details say). The offset is then kept — spacing is exactly
/// the rig's — and re-fixed only when the rig's clock jumps by more than two seconds (a reboot).
/// A failed refill (connection lost) ends the loop and calls `onLost`; discovery reconnects.
public final class IIORemoteCapture: ScanCapture, @unchecked Sendable {
    // @unchecked: `subscribers`, `running` and `retired` are touched only on `controlQueue`; the
    // loop's state lives in `readingLoop`'s locals on `readingQueue`; `fanOut`, `stopping` and
    // `buffer` are in Mutexes because the control queue changes them while the loop runs.
    public let context: IIORemoteContext
    public let deviceID: String
    public let plan: DeviceCapturePlan
    public let controlQueue: DispatchQueue
    public let readingQueue: DispatchQueue
    private let clock: any SystemClock
    private let log: Journal
    private let onLost: @Sendable (String) -> Void

    private var subscribers: [ObjectIdentifier: ScanConsumer] = [:]
    private var running = false
    private var retired = false

    private let fanOut: Mutex<ScanFanOut>
    private let stopping = Mutex(false)
    private let buffer = Mutex<IIORemoteBuffer?>(nil)

    /// The description put in the stream's details.
    public static let timestampsDetail =
        "remote kernel in_timestamp, offset to local boottime fixed from the least-delayed of the first refills (late by that delivery latency)"
    /// Refills held back to fix the clock offset.
    public static let calibrationRefills = 5

    public init(
        context: IIORemoteContext, deviceID: String, plan: DeviceCapturePlan, clock: any SystemClock, log: Journal,
        onLost: @escaping @Sendable (String) -> Void
    ) {
        self.context = context
        self.deviceID = deviceID
        self.plan = plan
        self.clock = clock
        self.log = log
        self.onLost = onLost
        controlQueue = DispatchQueue(label: "sensorkitd.iio.remote.control.\(deviceID)")
        readingQueue = DispatchQueue(label: "sensorkitd.iio.remote.read.\(deviceID)")
        fanOut = Mutex(ScanFanOut(plan: plan, boot: clock.bootID))
    }

    public func subscribe(_ consumer: ScanConsumer) {
        controlQueue.async { [self] in
            guard !retired else { return }
            subscribers[consumer.id] = consumer
            fanOut.withLock { $0.adopt([consumer]) }
            if !running { start() }
        }
    }

    public func unsubscribe(_ id: ObjectIdentifier) {
        controlQueue.async { [self] in
            guard subscribers.removeValue(forKey: id) != nil else { return }
            fanOut.withLock { $0.remove(id) }
            if subscribers.isEmpty && running { stop() }
        }
    }

    /// The rig went away or discovery is stopping: stop, and ignore later subscriptions.
    public func retire() {
        controlQueue.async { [self] in
            guard !retired else { return }
            retired = true
            subscribers.removeAll()
            if running { stop() }
        }
    }

    /// Waits until everything queued so far on the control queue has run (tests, shutdown).
    public func settle() { controlQueue.sync {} }

    private func start() {
        dispatchPrecondition(condition: .onQueue(controlQueue))
        running = true
        stopping.withLock { $0 = false }
        readingQueue.async { [self] in readingLoop() }
    }

    private func stop() {
        dispatchPrecondition(condition: .onQueue(controlQueue))
        running = false
        stopping.withLock { $0 = true }
        buffer.withLock { $0?.cancel() }
        readingQueue.sync {}  // the loop has ended and closed its buffer
    }

    /// Opens the buffer, applies the plan's rate fix-ups, then refills until stopped.
    private func readingLoop() {
        dispatchPrecondition(condition: .onQueue(readingQueue))
        let name = "\(context.uri) \(deviceID)"
        for setting in plan.plan.samplingFrequencies {
            // The attribute is shared by type: write it through the type's first channel.
            guard let channel = plan.plan.channels.first(where: { setting.attribute.hasPrefix("in_\($0.type)_") }) else {
                continue
            }
            do throws(SystemError) {
                try context.writeChannelAttribute(
                    device: deviceID, channel: String(channel.prefix.dropFirst(3)), "sampling_frequency",
                    BufferedCapture.format(setting.hertz))
            } catch {
                log.notice("\(name): \(error), ignoring")
            }
        }
        let channels =
            plan.plan.channels.map { String($0.prefix.dropFirst(3)) } + (plan.layout.timestamp != nil ? ["timestamp"] : [])
        let opened: IIORemoteBuffer
        do throws(SystemError) {
            opened = try context.openBuffer(device: deviceID, channels: channels, samples: plan.plan.watermark)
        } catch {
            log.error("\(name): \(error); not recording it")
            onLost("\(error)")
            return
        }
        defer {
            buffer.withLock { $0 = nil }
            opened.close()
        }
        guard opened.sampleSize == plan.layout.scanBytes else {
            // libiio 0.24 does not pad scans to their largest element (fixed in 0.25); our decoder would misread them.
            log.error(
                "\(name): libiio lays scans out in \(opened.sampleSize) bytes, the kernel in \(plan.layout.scanBytes); not recording it"
            )
            return
        }
        buffer.withLock { $0 = opened }
        if stopping.withLock({ $0 }) { return }

        let decoder = ScanDecoder(layout: plan.layout)
        var assembler = ScanAssembler(scanBytes: plan.layout.scanBytes)
        var values: [Int64] = []
        var stamps: [Int64] = []
        var offset: Int64?
        var held: [(values: [Int64], stamps: [Int64], receive: Int64)] = []
        defer {
            // Stopped or lost before calibration finished: what was held still goes out.
            if let chosen = held.map({ $0.receive.subtractingSaturating($0.stamps.last!) }).min() {
                for refill in held {
                    _ = fanOut.withLock {
                        $0.distributeAndDeliver(
                            values: refill.values, sensorTimes: refill.stamps.map { $0 &+ chosen },
                            receivedAt: refill.receive)
                    }
                }
            }
        }
        let width = plan.layout.valueCount
        while !stopping.withLock({ $0 }) {
            values.removeAll(keepingCapacity: true)
            stamps.removeAll(keepingCapacity: true)
            do throws(SystemError) {
                try opened.refill { bytes in
                    assembler.feed(bytes) { scan in
                        let start = values.count
                        values.append(contentsOf: repeatElement(0, count: width))
                        let stamp = values.withUnsafeMutableBufferPointer { all in
                            decoder.decode(scan, into: UnsafeMutableBufferPointer(rebasing: all[start..<(start + width)]))
                        }
                        stamps.append(stamp ?? 0)
                    }
                }
            } catch {
                if stopping.withLock({ $0 }) { return }
                if error.errno == ETIMEDOUT { continue }  // a slow sensor: nothing yet
                log.warning("\(name): \(error); reconnecting")
                fanOut.withLock { $0.interrupt("remote buffer failed: \(error)") }
                onLost("\(error)")
                return
            }
            guard let last = stamps.last else { continue }
            let receive = clock.boottimeNanoseconds()
            if plan.layout.timestamp == nil {
                let period = plan.rates.values.compactMap(\.period).min() ?? 0
                let sensorTimes = (0..<stamps.count).map {
                    receive.subtractingSaturating(Int64(stamps.count - 1 - $0).multipliedSaturating(by: period))
                }
                _ = fanOut.withLock { $0.distributeAndDeliver(values: values, sensorTimes: sensorTimes, receivedAt: receive) }
                continue
            }
            // The rig's stamps are a remote device's numbers (any Int64): saturate, never trap.
            let jump = receive.subtractingSaturating(last).subtractingSaturating(offset ?? 0)
            if offset != nil, jump.magnitude > 2_000_000_000 {
                log.notice("\(name): the rig's clock jumped by \(jump / 1_000_000) ms; timestamps re-anchored")
                offset = nil
            }
            guard let fixed = offset else {
                held.append((values, stamps, receive))
                guard held.count >= Self.calibrationRefills else { continue }
                let chosen = held.map { $0.receive.subtractingSaturating($0.stamps.last!) }.min()!
                offset = chosen
                for refill in held {
                    _ = fanOut.withLock {
                        $0.distributeAndDeliver(
                            values: refill.values, sensorTimes: refill.stamps.map { $0 &+ chosen },
                            receivedAt: refill.receive)
                    }
                }
                held.removeAll()
                continue
            }
            let sensorTimes = stamps.map { $0 &+ fixed }
            let dropped = fanOut.withLock {
                $0.distributeAndDeliver(values: values, sensorTimes: sensorTimes, receivedAt: receive)
            }
            if dropped > 0 {
                log.warning(
                    "\(name): \(dropped) of \(stamps.count) scans had an impossible timestamp and were dropped; recorded as a gap"
                )
            }
        }
    }
}
