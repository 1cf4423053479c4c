/// The host side of an HCI user channel as a value: the controller's init sequence, scan passes,
/// LE connections, ACL flow control, L2CAP on the fixed channels and disconnections. `on(event)`
/// returns what to do (packets to write, timers, what happened); `HCITransport` only does the I/O
/// (docs/ble.md §5). No sockets, no clock: tests drive it byte by byte.
public struct HCIHost: Sendable {
    public struct Options: Sendable {
        /// How long the controller may take to answer a command before it counts as gone.
        public var commandTimeoutMilliseconds = 2000
        /// How long an LE Create Connection may wait for the peripheral before it is cancelled.
        public var connectTimeoutMilliseconds = 10_000
        /// ACL fragments waiting per link for controller buffers; beyond it a PDU is refused.
        public var queuedFragmentsPerLink = 64
        /// Commands waiting for their turn; beyond it a request is refused.
        public var queuedCommands = 16
        public var scanParameters = HCIScanParameters()
        public var maximumDevices = 128
        public init() {}
    }

    public enum Event: Sendable {
        /// Begin the init sequence.
        case start
        /// One packet read from the controller.
        case received([UInt8])
        case timerExpired(Timer)
        /// Start a scan pass (parameters, then enable).
        case startScan
        /// End the pass: the reports are handed back in `.scanEnded`.
        case stopScan
        case connect(id: Int, address: String, addressType: BLEScanReport.AddressType)
        /// One ATT PDU for the link.
        case send(handle: UInt16, pdu: [UInt8])
        /// Our side closes the link (Disconnect, reason Remote User Terminated Connection).
        case close(handle: UInt16)
    }

    public enum Timer: Hashable, Sendable {
        case command
        case connect(id: Int)
    }

    public enum Action: Equatable, Sendable {
        case write([UInt8])
        case startTimer(Timer, milliseconds: Int)
        case cancelTimer(Timer)
        /// The init sequence is done: the controller's address and LE ACL buffers.
        case ready(address: String)
        /// The controller cannot be used any more (init refused, stopped answering): every link
        /// is gone with it.
        case failed(BLETransportError)
        case scanStarted
        case scanFailed(BLETransportError)
        case scanEnded([BLEScanReport])
        case connected(id: Int, handle: UInt16)
        case connectFailed(id: Int, BLETransportError)
        /// One ATT PDU from the link.
        case deliver(handle: UInt16, pdu: [UInt8])
        /// The link is gone (its Disconnection Complete, or the controller with it).
        case disconnected(handle: UInt16, reason: UInt8)
        /// The link's outgoing queue is full: the PDU was not sent.
        case congested(handle: UInt16)
    }

    public struct Counters: Equatable, Sendable {
        public var malformedPackets = 0
        public var droppedFrames = 0
        public var refusedPairings = 0
        public var parameterUpdates = 0
        public var malformedReports = 0
        public var droppedDevices = 0
    }

    public let options: Options
    public private(set) var counters = Counters()
    public private(set) var address: String?
    /// LE ACL data packets the controller buffers, and their largest data length.
    public private(set) var aclBufferCount = 0
    public private(set) var aclBufferSize = 0
    public var isReady: Bool { phase == .ready }

    private enum Phase: Equatable { case idle, initialising, ready, failed }
    private var phase = Phase.idle
    private var commands: [HCICommand] = []
    private var outstanding: HCICommand?

    private struct Link {
        var reassembler = L2CAPReassembler()
        var queue: [HCIACLPacket] = []
        var inFlight = 0
        var closing = false
    }

    private var links: [UInt16: Link] = [:]
    private var pendingConnect: (id: Int, address: String)?
    private var cancelledConnect = false
    private var scanning = false
    private var collector: HCIScanCollector?
    private var signalingIdentifier: UInt8 = 0

    public init(options: Options = Options()) { self.options = options }

    public static let maximumPacketSize = 4 + 255 + 1 + 65535

    public mutating func on(_ event: Event) -> [Action] {
        switch event {
        case .start:
            guard phase == .idle else { return [] }
            phase = .initialising
            return enqueue([
                HCICommand(opcode: HCICommand.reset),
                HCICommand(opcode: HCICommand.readBDAddress),
                HCICommand(opcode: HCICommand.leReadBufferSize),
                // Disconnection Complete, Command Complete/Status, Hardware Error, Number Of
                // Completed Packets, LE Meta (bits 4, 13, 14, 15, 18, 61).
                HCICommand(opcode: HCICommand.setEventMask, parameters: Self.mask([4, 13, 14, 15, 18, 61])),
                // LE Connection Complete, LE Advertising Report, LE Connection Update Complete.
                HCICommand(opcode: HCICommand.leSetEventMask, parameters: Self.mask([0, 1, 2])),
            ])
        case .received(let bytes): return received(bytes)
        case .timerExpired(.command):
            guard let outstanding else { return [] }
            return fail(
                "the controller did not answer command 0x\(Self.hex(outstanding.opcode)) within \(options.commandTimeoutMilliseconds) ms: it stopped answering or is not a controller"
            )
        case .timerExpired(.connect(let id)):
            guard let pending = pendingConnect, pending.id == id, !cancelledConnect else { return [] }
            cancelledConnect = true
            return enqueue([HCICommand(opcode: HCICommand.leCreateConnectionCancel)])
        case .startScan:
            guard phase == .ready else { return [.scanFailed(notReady)] }
            guard pendingConnect == nil else { return [.scanFailed(.busy("a connection is being made; the next scan retries"))] }
            collector = HCIScanCollector(capacity: options.maximumDevices)
            let parameters = options.scanParameters
            var scan: [UInt8] = [parameters.active ? 0x01 : 0x00]
            LittleEndianInteger.append(parameters.intervalUnits, to: &scan)
            LittleEndianInteger.append(parameters.windowUnits, to: &scan)
            scan += [0x00, 0x00]  // own address public, accept every advertiser
            return enqueue([
                HCICommand(opcode: HCICommand.leSetScanParameters, parameters: scan),
                HCICommand(opcode: HCICommand.leSetScanEnable, parameters: [0x01, parameters.filterDuplicates ? 0x01 : 0x00]),
            ])
        case .stopScan:
            guard let collector else { return [.scanEnded([])] }
            self.collector = nil
            counters.malformedReports += collector.malformedEvents
            counters.droppedDevices += collector.droppedDevices
            // Off even when the enable is still queued or unanswered, so no scan outlives its pass.
            let off = enqueue([HCICommand(opcode: HCICommand.leSetScanEnable, parameters: [0x00, 0x00])])
            scanning = false
            return off + [.scanEnded(collector.reports)]
        case .connect(let id, let address, let type):
            guard phase == .ready else { return [.connectFailed(id: id, notReady)] }
            guard pendingConnect == nil, collector == nil, let peer = BluetoothAddress.wireOrder(address) else {
                return [.connectFailed(id: id, .failed("cannot connect \(address) now: a scan or another connect is under way"))]
            }
            pendingConnect = (id, address)
            cancelledConnect = false
            var parameters: [UInt8] = []
            LittleEndianInteger.append(0x0060, to: &parameters)  // scan interval 60 ms
            LittleEndianInteger.append(0x0030, to: &parameters)  // scan window 30 ms
            parameters += [0x00, type == .public ? 0x00 : 0x01] + peer + [0x00]  // no filter list; own address public
            for value: UInt16 in [24, 40, 0, 400, 0, 0] {  // 30–50 ms interval, no latency, 4 s timeout
                LittleEndianInteger.append(value, to: &parameters)
            }
            return enqueue([HCICommand(opcode: HCICommand.leCreateConnection, parameters: parameters)])
                + [.startTimer(.connect(id: id), milliseconds: options.connectTimeoutMilliseconds)]
        case .send(let handle, let pdu):
            return send(L2CAPFrame(channel: L2CAPChannel.att, payload: pdu), on: handle)
        case .close(let handle):
            guard var link = links[handle], !link.closing else { return [] }
            link.closing = true
            link.queue = []
            links[handle] = link
            var parameters: [UInt8] = []
            LittleEndianInteger.append(handle, to: &parameters)
            parameters.append(0x13)  // Remote User Terminated Connection
            return enqueue([HCICommand(opcode: HCICommand.disconnect, parameters: parameters)])
        }
    }

    private var notReady: BLETransportError {
        phase == .failed
            ? .unavailable("the HCI controller failed; restart the daemon") : .busy("the HCI controller is still starting")
    }

    // MARK: commands

    private mutating func enqueue(_ new: [HCICommand]) -> [Action] {
        guard commands.count + new.count <= options.queuedCommands else {
            return fail("more than \(options.queuedCommands) HCI commands waiting: the controller does not keep up")
        }
        commands += new
        return next()
    }

    private mutating func next() -> [Action] {
        guard outstanding == nil, !commands.isEmpty, phase != .failed else { return [] }
        let command = commands.removeFirst()
        outstanding = command
        return [.write(command.bytes), .startTimer(.command, milliseconds: options.commandTimeoutMilliseconds)]
    }

    /// The answer to the outstanding command: its status (Command Status, or the first return
    /// parameter of Command Complete) and return parameters.
    private mutating func answered(_ opcode: UInt16, status: UInt8, returned: ArraySlice<UInt8>) -> [Action] {
        guard let command = outstanding, command.opcode == opcode else {
            counters.malformedPackets += 1
            return []
        }
        outstanding = nil
        var actions: [Action] = [.cancelTimer(.command)]
        actions += result(of: command, status: status, returned: returned)
        return actions + next()
    }

    private mutating func result(of command: HCICommand, status: UInt8, returned: ArraySlice<UInt8>) -> [Action] {
        let failed = status != 0
        switch command.opcode {
        case HCICommand.reset, HCICommand.setEventMask, HCICommand.leSetEventMask:
            if failed { return fail("the controller refused \(Self.name(command.opcode)) (status 0x\(Self.hex(status)))") }
            guard command.opcode == HCICommand.leSetEventMask, phase == .initialising, let address else { return [] }
            phase = .ready
            return [.ready(address: address)]
        case HCICommand.readBDAddress:
            guard !failed, returned.count == 6 else { return fail("the controller did not say its address") }
            address = BluetoothAddress.text(wireOrder: returned)
            return []
        case HCICommand.leReadBufferSize, HCICommand.readBufferSize:
            let le = command.opcode == HCICommand.leReadBufferSize
            guard !failed, returned.count == (le ? 3 : 7) else { return fail("the controller did not say its ACL buffers") }
            let size = Int(UInt16(returned[returned.startIndex]) | UInt16(returned[returned.startIndex + 1]) << 8)
            let count =
                le
                ? Int(returned[returned.startIndex + 2])
                : Int(UInt16(returned[returned.startIndex + 3]) | UInt16(returned[returned.startIndex + 4]) << 8)
            if le && (size == 0 || count == 0) {
                // LE shares the BR/EDR buffers (Core Vol 4 Part E §7.8.2): ask for those, before the masks.
                commands.insert(HCICommand(opcode: HCICommand.readBufferSize), at: 0)
                return []
            }
            // An L2CAP header must fit in a fragment; more than 255 buffers is not believed.
            guard size >= 4, count >= 1 else {
                return fail("the controller's ACL buffers (\(count) of \(size) bytes) cannot carry L2CAP")
            }
            aclBufferSize = min(size, 1021)
            aclBufferCount = min(count, 255)
            return []
        case HCICommand.leSetScanParameters, HCICommand.leSetScanEnable:
            let enabling = command.opcode == HCICommand.leSetScanParameters || command.parameters.first == 0x01
            guard enabling else { return [] }  // scan off refused (nothing was scanning) changes nothing
            if failed {
                collector = nil
                commands.removeAll { $0.opcode == HCICommand.leSetScanEnable }
                return [
                    .scanFailed(
                        .busy(
                            "the controller refused \(Self.name(command.opcode)) (status 0x\(Self.hex(status))); the next scan retries"
                        ))
                ]
            }
            if command.opcode == HCICommand.leSetScanEnable {
                scanning = true
                return [.scanStarted]
            }
            return []
        case HCICommand.leCreateConnection:
            guard failed, let pending = pendingConnect else { return [] }
            pendingConnect = nil
            return [
                .cancelTimer(.connect(id: pending.id)),
                .connectFailed(
                    id: pending.id, .failed("the controller refused to connect \(pending.address) (status 0x\(Self.hex(status)))")
                ),
            ]
        case HCICommand.disconnect:
            // A refused Disconnect: the handle is already gone (Unknown Connection Identifier).
            guard failed, let handle = command.parameters.first.map({ UInt16($0) | UInt16(command.parameters[1]) << 8 }),
                links.removeValue(forKey: handle) != nil
            else { return [] }
            return [.disconnected(handle: handle, reason: status)]
        default:
            return []
        }
    }

    private mutating func fail(_ why: String) -> [Action] {
        guard phase != .failed else { return [] }
        phase = .failed
        commands = []
        outstanding = nil
        var actions: [Action] = [.cancelTimer(.command)]
        if let pending = pendingConnect {
            pendingConnect = nil
            actions += [.cancelTimer(.connect(id: pending.id)), .connectFailed(id: pending.id, .unavailable(why))]
        }
        if collector != nil {
            collector = nil
            actions.append(.scanFailed(.unavailable(why)))
        }
        for handle in links.keys.sorted() { actions.append(.disconnected(handle: handle, reason: 0x08)) }
        links = [:]
        return actions + [.failed(.unavailable(why))]
    }

    // MARK: packets from the controller

    private mutating func received(_ bytes: [UInt8]) -> [Action] {
        guard phase != .failed, let type = bytes.first else { return [] }
        if type == HCIPacketType.acl.rawValue {
            guard let packet = try? HCIACLPacket.parse(bytes) else {
                counters.malformedPackets += 1
                return []
            }
            return acl(packet)
        }
        let event: HCIEvent
        do {
            event = try HCIEvent.parse(bytes)
        } catch {
            if case .malformed(HCIEvent.leMetaCode) = error, collector != nil {
                collector?.add(event: bytes)  // counted as a malformed report
            } else {
                counters.malformedPackets += 1
            }
            return []
        }
        switch event {
        case .commandComplete(_, let opcode, let returned):
            guard opcode != 0 else { return [] }  // a controller's "ready for commands"
            return answered(opcode, status: returned.first ?? 0xFF, returned: returned.dropFirst())
        case .commandStatus(let status, _, let opcode):
            guard opcode != 0 else { return [] }
            return answered(opcode, status: status, returned: [])
        case .leAdvertisingReports(let reports):
            for report in reports { collector?.add(report) }
            return []
        case .leConnectionComplete(let complete): return connectionComplete(complete)
        case .disconnectionComplete(let status, let handle, let reason):
            guard status == 0, links.removeValue(forKey: handle) != nil else { return [] }
            return [.disconnected(handle: handle, reason: reason)]
        case .numberOfCompletedPackets(let pairs):
            var actions: [Action] = []
            for pair in pairs {
                guard var link = links[pair.handle] else { continue }
                // A controller that completes more than was sent is not believed beyond that.
                link.inFlight -= min(Int(pair.packets), link.inFlight)
                links[pair.handle] = link
            }
            for handle in links.keys.sorted() { actions += flush(handle) }
            return actions
        case .other: return []
        }
    }

    private mutating func connectionComplete(_ complete: HCIConnectionComplete) -> [Action] {
        guard let pending = pendingConnect else {
            // Not ours (we never advertise): disconnect whatever it is.
            guard complete.status == 0 else { return [] }
            links[complete.handle] = Link(closing: true)
            var parameters: [UInt8] = []
            LittleEndianInteger.append(complete.handle, to: &parameters)
            return enqueue([HCICommand(opcode: HCICommand.disconnect, parameters: parameters + [0x13])])
        }
        pendingConnect = nil
        var actions: [Action] = [.cancelTimer(.connect(id: pending.id))]
        guard complete.status == 0 else {
            let why =
                cancelledConnect
                ? "\(pending.address) did not answer within \(options.connectTimeoutMilliseconds) ms (out of range)"
                : "connecting \(pending.address) failed (status 0x\(Self.hex(complete.status)))"
            return actions + [.connectFailed(id: pending.id, .failed(why))]
        }
        guard links[complete.handle] == nil else {
            counters.malformedPackets += 1
            return actions + [
                .connectFailed(id: pending.id, .failed("the controller reused connection handle \(complete.handle)"))
            ]
        }
        links[complete.handle] = Link()
        actions.append(.connected(id: pending.id, handle: complete.handle))
        return actions
    }

    // MARK: ACL and L2CAP

    private mutating func acl(_ packet: HCIACLPacket) -> [Action] {
        guard var link = links[packet.handle] else {
            counters.malformedPackets += 1
            return []
        }
        let outcome = link.reassembler.add(packet)
        counters.droppedFrames += link.reassembler.droppedFrames - (links[packet.handle]?.reassembler.droppedFrames ?? 0)
        links[packet.handle] = link
        guard case .frame(let frame) = outcome, !link.closing else { return [] }
        switch frame.channel {
        case L2CAPChannel.att: return [.deliver(handle: packet.handle, pdu: frame.payload)]
        case L2CAPChannel.leSignaling: return signaling(frame.payload, on: packet.handle)
        case L2CAPChannel.securityManager: return securityManager(frame.payload, on: packet.handle)
        default: return []  // a channel this host never opened
        }
    }

    private mutating func send(_ frame: L2CAPFrame, on handle: UInt16) -> [Action] {
        guard var link = links[handle], !link.closing else { return [] }
        let fragments = frame.fragments(handle: handle, bufferSize: aclBufferSize)
        guard link.queue.count + fragments.count <= options.queuedFragmentsPerLink else { return [.congested(handle: handle)] }
        link.queue += fragments
        links[handle] = link
        return flush(handle)
    }

    /// Hands the controller as many queued fragments as it has free buffers for, across all links.
    private mutating func flush(_ handle: UInt16) -> [Action] {
        var free = aclBufferCount - links.values.reduce(0) { $0 + $1.inFlight }
        guard var link = links[handle] else { return [] }
        var actions: [Action] = []
        while free > 0, !link.queue.isEmpty {
            actions.append(.write(link.queue.removeFirst().bytes))
            link.inFlight += 1
            free -= 1
        }
        links[handle] = link
        return actions
    }

    /// LE signaling (Core Vol 3 Part A §4). A Connection Parameter Update Request with valid
    /// parameters is accepted and applied with LE Connection Update — a wearable asks for a
    /// longer interval to save its battery, and refusing would only make it ask again or drop the
    /// link; invalid ones are answered "rejected". Any other request is Command Reject "not
    /// understood".
    private mutating func signaling(_ payload: [UInt8], on handle: UInt16) -> [Action] {
        guard payload.count >= 4 else { return [] }
        let code = payload[0]
        let identifier = payload[1]
        let length = Int(UInt16(payload[2]) | UInt16(payload[3]) << 8)
        guard length == payload.count - 4 else { return [] }
        let connectionParameterUpdateRequest: UInt8 = 0x12
        // Command Reject, the responses and the credit indication are never answered.
        let unanswered: Set<UInt8> = [0x01, 0x07, 0x13, 0x15, 0x16, 0x18, 0x1A]
        if code == connectionParameterUpdateRequest, length == 8 {
            let field = { (at: Int) in UInt16(payload[4 + at]) | UInt16(payload[5 + at]) << 8 }
            let requested = HCIConnectionParameters(
                intervalMinimum: field(0), intervalMaximum: field(2), latency: field(4), supervisionTimeout: field(6))
            let accepted = requested.isValid
            var actions = send(
                L2CAPFrame(
                    channel: L2CAPChannel.leSignaling, payload: [0x13, identifier, 0x02, 0x00, accepted ? 0x00 : 0x01, 0x00]),
                on: handle)
            guard accepted else { return actions }
            counters.parameterUpdates += 1
            var parameters: [UInt8] = []
            for value in [
                handle, requested.intervalMinimum, requested.intervalMaximum, requested.latency, requested.supervisionTimeout, 0,
                0,
            ] {
                LittleEndianInteger.append(value, to: &parameters)
            }
            actions += enqueue([HCICommand(opcode: HCICommand.leConnectionUpdate, parameters: parameters)])
            return actions
        }
        guard !unanswered.contains(code) else { return [] }
        return send(
            L2CAPFrame(channel: L2CAPChannel.leSignaling, payload: [0x01, identifier, 0x02, 0x00, 0x00, 0x00]), on: handle)
    }

    /// SMP (Core Vol 3 Part H §3.5): this transport does not pair (the bluez transport does), so a
    /// Pairing Request or a Security Request is answered Pairing Failed, Pairing Not Supported.
    private mutating func securityManager(_ payload: [UInt8], on handle: UInt16) -> [Action] {
        let pairingRequest: UInt8 = 0x01
        let securityRequest: UInt8 = 0x0B
        guard let code = payload.first, code == pairingRequest || code == securityRequest else { return [] }
        counters.refusedPairings += 1
        return send(L2CAPFrame(channel: L2CAPChannel.securityManager, payload: [0x05, 0x05]), on: handle)
    }

    // MARK: helpers

    /// An 8-byte event mask with `bits` set, little-endian.
    static func mask(_ bits: [Int]) -> [UInt8] {
        var value: UInt64 = 0
        for bit in bits where (0..<64).contains(bit) { value |= 1 << UInt64(bit) }
        return (0..<8).map { UInt8(truncatingIfNeeded: value >> UInt64($0 * 8)) }
    }

    static func hex<T: BinaryInteger>(_ value: T) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, MemoryLayout<T>.size * 2 - text.count)) + text
    }

    static func name(_ opcode: UInt16) -> String {
        switch opcode {
        case HCICommand.reset: "Reset"
        case HCICommand.setEventMask: "Set Event Mask"
        case HCICommand.leSetEventMask: "LE Set Event Mask"
        case HCICommand.leSetScanParameters: "LE Set Scan Parameters"
        case HCICommand.leSetScanEnable: "LE Set Scan Enable"
        default: "command 0x\(hex(opcode))"
        }
    }
}
