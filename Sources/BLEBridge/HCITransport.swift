import Dispatch
import Glibc
import SensorSystem
import Synchronization
import SystemBus

/// The radio on an adapter of our own: an HCI user channel (`HCI_CHANNEL_USER`), or a Unix
/// SEQPACKET socket carrying the same H4 packets (a controller proxy such as BlueZ's `btproxy`,
/// or the emulated controller), driven by our own host (`HCIHost`: commands, LE connections, ACL,
/// L2CAP). Each connection's ATT channel is handed to `ATTGATTLink` as a `SeqPacketATTBearer` over
/// one end of a socket pair whose other end this transport bridges to the link's ACL data, so
/// everything above the bearer is the emulated transport's code (docs/ble.md §5).
///
/// One serial queue owns the controller socket, the host state and the bridges; the driver's
/// calls (`scan`, `connect`) wait on it for their answer.
public final class HCITransport: BLETransport, @unchecked Sendable {
    // @unchecked: every mutable field is confined to `queue`.
    public struct Options: Sendable {
        /// How long one `scan()` listens; at most 1 s (the driver calls it about once a second).
        public var scanDurationMilliseconds = 1000
        public var host = HCIHost.Options()
        public init() {}
    }

    public struct Counters: Equatable, Sendable {
        public var host = HCIHost.Counters()
        /// ATT PDUs dropped because the link's bearer did not read them, or its ACL queue was full.
        public var droppedPDUs = 0
        /// Packets the controller's socket would not take (it stopped reading; the command timer
        /// then fails it).
        public var unsentPackets = 0
    }

    /// `hci0`, or the controller socket's path.
    public let name: String
    public let options: Options
    /// The controller's own address (Read BD_ADDR).
    public private(set) var controllerAddress = ""
    private let queue = DispatchQueue(label: "sensorkit.ble.hci")
    private var fd: Int32
    private var host: HCIHost
    private var readSource: (any DispatchSourceRead)?
    private var timers: [HCIHost.Timer: any DispatchSourceTimer] = [:]
    /// The transport's end of each connection's socket pair, by connection handle.
    private var bridges: [UInt16: (fd: Int32, source: any DispatchSourceRead)] = [:]
    private var nextConnect = 0
    private var waiters: [Waiter: DispatchSemaphore] = [:]
    private var answers: [Waiter: Answer] = [:]
    private var droppedPDUs = 0
    private var unsentPackets = 0
    private let radio = Mutex(())

    private enum Waiter: Hashable { case ready, scanStart, scanEnd, connect(Int) }
    private enum Answer { case ok, failed(BLETransportError), reports([BLEScanReport]), bearer(Int32) }

    private init(name: String, fd: Int32, options: Options) {
        self.name = name
        self.fd = fd
        self.options = options
        host = HCIHost(options: options.host)
    }

    deinit {
        for bridge in bridges.values {
            bridge.source.cancel()
            SystemCalls.close(bridge.fd)
        }
        for timer in timers.values { timer.cancel() }
        readSource?.cancel()
        if fd >= 0 { SystemCalls.close(fd) }
    }

    public var statistics: Counters {
        queue.sync { Counters(host: host.counters, droppedPDUs: droppedPDUs, unsentPackets: unsentPackets) }
    }

    /// Opens adapter `hciN` on the user channel. An adapter bluetoothd manages (asked on `bus`) is
    /// refused with `.busy` and the fix before the kernel is touched; every refusal of the
    /// kernel is one sentence with what to do (`transportError`).
    public static func open(adapter: String, options: Options = Options(), bus: DBusBus = .system) throws(BLETransportError)
        -> HCITransport
    {
        guard let index = adapterIndex(adapter) else {
            throw .failed("Bluetooth adapter name \"\(adapter)\" is not of the form hci0, hci1, …")
        }
        let presence = BluetoothdPresence.probe(adapter: adapter, bus: bus)
        if let refusal = BluetoothdPresence.hciRefusal(
            adapter: adapter, presence: presence, processRunning: BluetoothdPresence.processRunning(), adapterUp: nil)
        {
            throw .busy(refusal)
        }
        let fd: Int32
        do { fd = try HCILibrary.openUserChannel(UInt16(index)) } catch { throw transportError(error, adapter: adapter) }
        return try start(HCITransport(name: adapter, fd: fd, options: options))
    }

    /// Reaches a controller through a Unix SEQPACKET socket at `path` carrying H4 packets, one per
    /// packet (`[ble] transport = hci-socket:PATH`).
    public static func open(controllerSocket path: String, options: Options = Options()) throws(BLETransportError) -> HCITransport
    {
        let fd: Int32
        do { fd = try SeqPacketSocket.connect(path: path) } catch {
            throw .unavailable("no HCI controller listens at \(path) (\(error))")
        }
        return try start(HCITransport(name: path, fd: fd, options: options))
    }

    private static func start(_ transport: HCITransport) throws(BLETransportError) -> HCITransport {
        let outcome = transport.request(.ready, within: transport.options.host.commandTimeoutMilliseconds * 8) {
            $0.beginReading()
            return $0.host.on(.start)
        }
        if case .failed(let error) = outcome {
            transport.shutDown()
            throw error
        }
        return transport
    }

    /// Stops reading and closes the controller socket (the links go with it).
    public func shutDown() {
        queue.sync { closeController() }
    }

    // MARK: BLETransport

    public func scan() throws(BLETransportError) -> [BLEScanReport] {
        try radio.withLock { (_) throws(BLETransportError) in
            if case .failed(let error) = request(
                .scanStart, within: options.host.commandTimeoutMilliseconds * 3, { $0.host.on(.startScan) })
            {
                // The pass never started: collect (and drop) what the host kept.
                _ = request(.scanEnd, within: options.host.commandTimeoutMilliseconds) { $0.host.on(.stopScan) }
                throw error
            }
            usleep(UInt32(min(max(options.scanDurationMilliseconds, 1), 1000)) * 1000)
            switch request(.scanEnd, within: options.host.commandTimeoutMilliseconds, { $0.host.on(.stopScan) }) {
            case .reports(let reports): return reports
            case .failed(let error): throw error
            default: return []
            }
        }
    }

    public func connect(
        _ report: BLEScanReport, queue linkQueue: DispatchQueue, onEvent: @escaping @Sendable (GATTLinkEvent) -> Void
    ) throws(BLETransportError) -> any GATTLink {
        ATTGATTLink.open(bearer: try connect(report), queue: linkQueue, onEvent: onEvent)
    }

    /// The ATT bearer alone: an LE connection to the report's address, its ATT channel as one end
    /// of a socket pair.
    public func connect(_ report: BLEScanReport) throws(BLETransportError) -> any ATTBearer {
        let id = queue.sync {
            nextConnect += 1
            return nextConnect
        }
        let within = options.host.connectTimeoutMilliseconds + options.host.commandTimeoutMilliseconds * 3
        let outcome = radio.withLock { _ in
            request(.connect(id), within: within) {
                $0.host.on(.connect(id: id, address: report.address, addressType: report.addressType))
            }
        }
        switch outcome {
        case .bearer(let fd): return SeqPacketATTBearer(fileDescriptor: fd)
        case .failed(let error): throw error
        default: throw .failed("connecting \(report.address): no answer")
        }
    }

    // MARK: the queue's work

    /// Runs `body` on the queue, performs its actions and waits for the answer to `waiter`.
    private func request(
        _ waiter: Waiter, within milliseconds: Int, _ body: @escaping @Sendable (HCITransport) -> [HCIHost.Action]
    ) -> Answer {
        let semaphore = DispatchSemaphore(value: 0)
        queue.async {
            self.waiters[waiter] = semaphore
            guard self.fd >= 0 else {
                self.answer(waiter, .failed(.unavailable("the HCI controller \(self.name) is gone")))
                return
            }
            self.perform(body(self))
        }
        if semaphore.wait(timeout: .now() + .milliseconds(max(1, milliseconds))) == .timedOut {
            return queue.sync {
                waiters[waiter] = nil
                return answers.removeValue(forKey: waiter)
                    ?? .failed(.unavailable("the HCI controller \(name) did not answer within \(milliseconds) ms"))
            }
        }
        return queue.sync { answers.removeValue(forKey: waiter) ?? .failed(.failed("no answer")) }
    }

    private func answer(_ waiter: Waiter, _ value: Answer) {
        guard let semaphore = waiters.removeValue(forKey: waiter) else { return }
        answers[waiter] = value
        semaphore.signal()
    }

    private func beginReading() {
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [weak self] in self?.readController() }
        source.resume()
        readSource = source
    }

    private func readController() {
        // A turn reads at most 64 packets, so timers and bridges get their turns under a flood.
        for _ in 0..<64 where fd >= 0 {
            let result: IOResult<SeqPacketSocket.Received>
            do { result = try SeqPacketSocket.receive(fd, capacity: Self.maximumPacket) } catch {
                return controllerLost("reading \(name) failed (\(error))")
            }
            switch result {
            case .wouldBlock: return
            case .done(.closed): return controllerLost("\(name) closed the HCI connection")
            case .done(.truncated): perform(host.on(.received([])))  // over any real packet: dropped
            case .done(.packet(let bytes)): perform(host.on(.received(bytes)))
            }
        }
    }

    /// Largest packet read: an event (2 + 255) or an ACL packet of up to 1021 data bytes.
    static let maximumPacket = 5 + 1021

    private func write(_ packet: [UInt8]) {
        guard fd >= 0 else { return }
        do {
            if case .wouldBlock = try SeqPacketSocket.send(fd, packet) {
                // The controller's socket is full: it stopped reading. The command timer notices.
                unsentPackets += 1
            }
        } catch {
            controllerLost("writing to \(name) failed (\(error))")
        }
    }

    private func perform(_ actions: [HCIHost.Action]) {
        for action in actions {
            switch action {
            case .write(let packet): write(packet)
            case .startTimer(let timer, let milliseconds):
                timers[timer]?.cancel()
                let source = DispatchSource.makeTimerSource(queue: queue)
                source.schedule(deadline: .now() + .milliseconds(milliseconds))
                source.setEventHandler { [weak self] in
                    guard let self else { return }
                    self.timers[timer]?.cancel()
                    self.timers[timer] = nil
                    self.perform(self.host.on(.timerExpired(timer)))
                }
                source.resume()
                timers[timer] = source
            case .cancelTimer(let timer):
                timers.removeValue(forKey: timer)?.cancel()
            case .ready(let address):
                controllerAddress = address
                answer(.ready, .ok)
            case .failed(let error):
                for waiter in Array(waiters.keys) { answer(waiter, .failed(error)) }
            case .scanStarted: answer(.scanStart, .ok)
            case .scanFailed(let error): answer(.scanStart, .failed(error))
            case .scanEnded(let reports): answer(.scanEnd, .reports(reports))
            case .connected(let id, let handle):
                // Bridged at once, so no PDU of the link arrives before its bearer exists.
                guard waiters[.connect(id)] != nil else {
                    perform(host.on(.close(handle: handle)))  // its caller gave up waiting
                    continue
                }
                switch bridge(handle) {
                case .success(let fd): answer(.connect(id), .bearer(fd))
                case .failure(let error): answer(.connect(id), .failed(error))
                }
            case .connectFailed(let id, let error): answer(.connect(id), .failed(error))
            case .deliver(let handle, let pdu): deliver(pdu, to: handle)
            case .disconnected(let handle, _): unbridge(handle)
            case .congested: droppedPDUs += 1
            }
        }
    }

    // MARK: bridges

    /// The bearer's end of a new socket pair for the link; the other end is read here.
    private func bridge(_ handle: UInt16) -> Result<Int32, BLETransportError> {
        let pair: (Int32, Int32)
        do { pair = try SeqPacketSocket.pair() } catch {
            perform(host.on(.close(handle: handle)))
            return .failure(.failed("socketpair for the ATT bearer failed (\(error))"))
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: pair.0, queue: queue)
        source.setEventHandler { [weak self] in self?.readBearer(handle) }
        source.resume()
        bridges[handle] = (pair.0, source)
        return .success(pair.1)
    }

    /// PDUs the ATT client sent; the bearer's close (end of stream) is our Disconnect.
    private func readBearer(_ handle: UInt16) {
        guard let bridge = bridges[handle] else { return }
        for _ in 0..<16 {
            switch try? SeqPacketSocket.receive(bridge.fd, capacity: ATTPDU.maximumMTU) {
            case .wouldBlock: return
            case .done(.packet(let pdu)): perform(host.on(.send(handle: handle, pdu: pdu)))
            case .done(.truncated): droppedPDUs += 1
            case .done(.closed), nil:
                unbridge(handle)
                return perform(host.on(.close(handle: handle)))
            }
        }
    }

    private func deliver(_ pdu: [UInt8], to handle: UInt16) {
        guard let bridge = bridges[handle] else { return }
        guard case .done = (try? SeqPacketSocket.send(bridge.fd, pdu)) ?? .wouldBlock else {
            droppedPDUs += 1  // the link's reader is stuck: the socket pair's buffer bounds it
            return
        }
    }

    /// Closing our end is the bearer's `.disconnected`.
    private func unbridge(_ handle: UInt16) {
        guard let bridge = bridges.removeValue(forKey: handle) else { return }
        bridge.source.cancel()
        SystemCalls.close(bridge.fd)
    }

    private func controllerLost(_ why: String) {
        closeController()
        for waiter in Array(waiters.keys) { answer(waiter, .failed(.unavailable(why))) }
    }

    private func closeController() {
        for handle in Array(bridges.keys) { unbridge(handle) }
        for timer in timers.values { timer.cancel() }
        timers = [:]
        readSource?.cancel()
        readSource = nil
        if fd >= 0 { SystemCalls.close(fd) }
        fd = -1
    }

    // MARK: names and errors

    /// `hciN` → N (0…65534; 65535 is the kernel's "no device").
    static func adapterIndex(_ name: String) -> Int32? {
        guard name.hasPrefix("hci"), let digits = Optional(name.dropFirst(3)), !digits.isEmpty, digits.allSatisfy(\.isASCII),
            digits.allSatisfy(\.isNumber), digits.count <= 5, let index = Int32(digits), index < 0xFFFF
        else { return nil }
        return index
    }

    /// What a refused socket or bind means, in one sentence with what to do about it.
    static func transportError(_ error: SystemError, adapter: String) -> BLETransportError {
        let index = adapterIndex(adapter).map(String.init) ?? "N"
        return switch error.errno {
        case EAFNOSUPPORT:
            .unavailable(
                "this kernel has no Bluetooth support (\(error.call) failed with EAFNOSUPPORT), so no BLE wearable can be recorded here"
            )
        case ENODEV, ENXIO:
            .unavailable("there is no Bluetooth adapter \(adapter) (\(error))")
        case EBUSY, EALREADY:
            .busy(
                "\(adapter) is up or in use (\(error)): the hci transport takes the adapter for itself, so it must be down; `btmgmt --index \(index) power off`, or stop bluetooth.service for it"
            )
        case EPERM, EACCES:
            .failed(
                "\(error.call) was refused (\(error)): an HCI user channel needs CAP_NET_ADMIN; grant it with `AmbientCapabilities=CAP_NET_ADMIN` in the service unit (the hci-transport.conf drop-in) or `setcap cap_net_admin+eip` on the binary"
            )
        default:
            .failed("\(adapter): \(error)")
        }
    }
}
