import Dispatch
import Glibc
import SensorSystem

/// A BLE controller as an HCI user channel shows it to a host — H4 packets, one per SEQPACKET
/// packet (first byte 0x01 command, 0x02 ACL, 0x04 event) — on a listening Unix socket, backed by
/// the emulated peripherals of a transport directory (`ADDR.adv`, `ADDR.att`). Written from the
/// Core Specification (Vol 4 Part E, Vol 3 Part A) without `BLEBridge`, so the host is tested
/// against an independent reading of the same layouts (docs/ble.md §5, "The emulated controller").
///
/// It answers the commands a host sends at start, reports every peripheral in the directory as an
/// advertisement and a scan response while scanning, connects a peripheral's `.att` socket on LE
/// Create Connection and carries its ATT PDUs as L2CAP channel 4 in ACL packets cut to a small
/// buffer size (27 bytes by default, so fragmentation happens), sending Number Of Completed
/// Packets for every packet the host sends. One host at a time; everything on one queue.
public final class EmulatedController: @unchecked Sendable {
    // @unchecked: every mutable field is confined to `queue`.
    public struct Options: Sendable {
        public var address = "0E:C0:00:00:00:01"
        public var aclBufferSize = 27
        public var aclBuffers = 4
        /// Answer LE Read Buffer Size with zeros (LE shares the BR/EDR buffers), as some controllers do.
        public var sharedBuffers = false
        public var scanReportInterval = DispatchTimeInterval.milliseconds(50)
        public init() {}
    }

    public let socketPath: String
    public let directory: String
    public let options: Options
    private let queue = DispatchQueue(label: "sensorkit.emulated-controller")
    private let listener: Int32
    private var acceptSource: (any DispatchSourceRead)?
    private var host: Int32 = -1
    private var hostSource: (any DispatchSourceRead)?
    private var scanTimer: (any DispatchSourceTimer)?
    private var pending: (address: [UInt8], type: UInt8)?

    private struct Link {
        var address: String
        var att: Int32
        var source: any DispatchSourceRead
        var incoming: [UInt8] = []
    }

    private var links: [UInt16: Link] = [:]
    private var nextHandle: UInt16 = 0x0040
    private var log = Log()

    /// What the host did, for the tests.
    public struct Log: Sendable {
        public var opcodes: [UInt16] = []
        /// L2CAP frames the host sent on channels other than ATT: (channel, payload).
        public var signaling: [[UInt8]] = []
        public var securityManager: [[UInt8]] = []
        public var aclPackets = 0
        public var connections = 0
        /// Packets the host did not take within a second.
        public var unsentPackets = 0
    }

    public var history: Log { queue.sync { log } }
    public var connectedAddresses: [String] { queue.sync { links.values.map(\.address).sorted() } }

    public init(directory: String, socketPath: String, options: Options = Options()) throws {
        self.directory = directory
        self.socketPath = socketPath
        self.options = options
        listener = try SeqPacketSocket.listen(path: socketPath)
        let source = DispatchSource.makeReadSource(fileDescriptor: listener, queue: queue)
        source.setEventHandler { [weak self] in self?.acceptHost() }
        source.resume()
        acceptSource = source
    }

    public func stop() {
        queue.sync {
            acceptSource?.cancel()
            acceptSource = nil
            SystemCalls.close(listener)
            for handle in Array(links.keys) { closeLink(handle, reason: nil) }
            closeHost()
            try? SystemCalls.unlink(socketPath)
        }
    }

    // MARK: faults a test asks for

    /// Ends every link as a supervision timeout would (Disconnection Complete, reason 0x08).
    public func dropLinks() {
        queue.sync { for handle in Array(links.keys) { closeLink(handle, reason: 0x08) } }
    }

    /// The peripheral asks for other connection parameters (L2CAP LE signaling, code 0x12).
    public func requestParameterUpdate(intervalMinimum: UInt16 = 40, intervalMaximum: UInt16 = 56, timeout: UInt16 = 400) {
        queue.sync {
            guard let handle = links.keys.min() else { return }
            let payload =
                [0x12, 0x21, 0x08, 0x00] + Self.le(intervalMinimum) + Self.le(intervalMaximum) + [0, 0] + Self.le(timeout)
            sendFrame(channel: 5, payload, on: handle)
        }
    }

    /// The peripheral starts pairing (SMP Pairing Request: no I/O, bonding, key size 16).
    public func requestPairing() {
        queue.sync {
            guard let handle = links.keys.min() else { return }
            sendFrame(channel: 6, [0x01, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07], on: handle)
        }
    }

    /// Sends the host these bytes as one packet (hostile controllers).
    public func inject(_ packet: [UInt8]) {
        queue.sync { toHost(packet) }
    }

    /// An ACL packet of the first link with a chosen L2CAP length and payload (hostile frames).
    public func injectFrame(declaredLength: UInt16, channel: UInt16 = 4, payload: [UInt8]) {
        queue.sync {
            guard let handle = links.keys.min() else { return }
            let data = Self.le(declaredLength) + Self.le(channel) + payload
            toHost([0x02] + Self.le(handle | 0x2000) + Self.le(UInt16(data.count)) + data)
        }
    }

    // MARK: the host socket

    private func acceptHost() {
        guard case .done(let fd) = try? SeqPacketSocket.accept(listener) else { return }
        guard host < 0 else {
            SystemCalls.close(fd)  // one host at a time, as a user channel
            return
        }
        host = fd
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [weak self] in self?.readHost() }
        source.resume()
        hostSource = source
    }

    private func closeHost() {
        hostSource?.cancel()
        hostSource = nil
        if host >= 0 { SystemCalls.close(host) }
        host = -1
        scanTimer?.cancel()
        scanTimer = nil
    }

    private func readHost() {
        for _ in 0..<64 {
            switch try? SeqPacketSocket.receive(host, capacity: 2048) {
            case .wouldBlock: return
            case .done(.packet(let bytes)): handle(bytes)
            case .done(.truncated): continue
            case .done(.closed), nil:
                for handle in Array(links.keys) { closeLink(handle, reason: nil) }
                closeHost()
                return
            }
        }
    }

    /// Waits (up to a second) while the host's socket is full rather than dropping: a test's
    /// host on a loaded machine must not lose packets the test then misses. A real user channel
    /// drops at the socket's limit instead; the host counts what that breaks.
    private func toHost(_ packet: [UInt8]) {
        guard host >= 0 else { return }
        for _ in 0..<1000 {
            guard case .wouldBlock? = try? SeqPacketSocket.send(host, packet) else { return }
            usleep(1000)
        }
        log.unsentPackets += 1
    }

    private func event(_ code: UInt8, _ parameters: [UInt8]) {
        toHost([0x04, code, UInt8(parameters.count)] + parameters)
    }

    private func complete(_ opcode: UInt16, _ returned: [UInt8]) { event(0x0E, [0x01] + Self.le(opcode) + returned) }
    private func status(_ opcode: UInt16, _ status: UInt8) { event(0x0F, [status, 0x01] + Self.le(opcode)) }

    private func handle(_ packet: [UInt8]) {
        guard let type = packet.first else { return }
        if type == 0x02 { return acl(packet) }
        guard type == 0x01, packet.count >= 4, Int(packet[3]) == packet.count - 4 else { return }
        let opcode = UInt16(packet[1]) | UInt16(packet[2]) << 8
        let parameters = Array(packet[4...])
        log.opcodes.append(opcode)
        switch opcode {
        case 0x0C03:  // Reset
            scanTimer?.cancel()
            scanTimer = nil
            complete(opcode, [0x00])
        case 0x0C01, 0x2001: complete(opcode, [0x00])  // event masks
        case 0x1009: complete(opcode, [0x00] + Self.addressBytes(options.address))
        case 0x2002:
            complete(
                opcode,
                options.sharedBuffers
                    ? [0x00, 0x00, 0x00, 0x00] : [0x00] + Self.le(UInt16(options.aclBufferSize)) + [UInt8(options.aclBuffers)])
        case 0x1005:
            complete(
                opcode,
                [0x00] + Self.le(UInt16(options.aclBufferSize)) + [0x40] + Self.le(UInt16(options.aclBuffers)) + [0x00, 0x00])
        case 0x200B: complete(opcode, [scanTimer == nil ? 0x00 : 0x0C])  // Command Disallowed while scanning
        case 0x200C:
            complete(opcode, [0x00])
            if parameters.first == 0x01 {
                startScanning()
            } else {
                scanTimer?.cancel()
                scanTimer = nil
            }
        case 0x200D: createConnection(parameters)
        case 0x200E:  // Create Connection Cancel
            guard pending != nil else { return complete(opcode, [0x0C]) }
            pending = nil
            complete(opcode, [0x00])
            event(0x3E, [0x01, 0x02, 0x00, 0x00, 0x00, 0x00] + [UInt8](repeating: 0, count: 6) + [0, 0, 0, 0, 0, 0, 0])
        case 0x0406:  // Disconnect
            let handle = parameters.count == 3 ? UInt16(parameters[0]) | UInt16(parameters[1]) << 8 : 0xFFFF
            guard links[handle] != nil else { return status(opcode, 0x02) }
            status(opcode, 0x00)
            closeLink(handle, reason: 0x16)
        case 0x2013: status(opcode, links.isEmpty ? 0x02 : 0x00)  // LE Connection Update
        default: complete(opcode, [0x01])  // Unknown HCI Command
        }
    }

    // MARK: scanning

    private func startScanning() {
        scanTimer?.cancel()
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now(), repeating: options.scanReportInterval)
        timer.setEventHandler { [weak self] in self?.advertise() }
        timer.resume()
        scanTimer = timer
    }

    /// One advertisement and one scan response per peripheral in the directory: the `.adv` file's
    /// AD structures up to 31 bytes are the advertising data, the rest the scan response.
    private func advertise() {
        for (address, data) in peripherals() {
            var split = 0
            while split < data.count, split + 1 + Int(data[split]) <= 31 { split += 1 + Int(data[split]) }
            let advertising = Array(data[..<min(split, data.count)])
            let response = Array(data[min(split, data.count)...].prefix(31))
            for (kind, bytes): (UInt8, [UInt8]) in [(0x00, advertising), (0x04, response)] {
                let report =
                    [0x02, 0x01, kind, 0x00] + Self.addressBytes(address) + [UInt8(bytes.count)] + bytes + [
                        UInt8(bitPattern: -58)
                    ]
                event(0x3E, report)
            }
        }
    }

    private func peripherals() -> [(String, [UInt8])] {
        guard let names = try? SystemCalls.directoryEntries(directory) else { return [] }
        return names.sorted().compactMap { name in
            guard name.hasSuffix(".adv") else { return nil }
            let address = String(name.dropLast(4))
            guard Self.addressBytes(address).count == 6, names.contains(address + ".att"),
                let bytes = Self.readSmall("\(directory)/\(name)", limit: 62)
            else { return nil }
            return (address, bytes)
        }
    }

    // MARK: connections

    private func createConnection(_ parameters: [UInt8]) {
        guard parameters.count == 25, pending == nil else { return status(0x200D, 0x0C) }
        status(0x200D, 0x00)
        let peer = Array(parameters[6..<12])
        let address = Self.addressText(peer)
        guard let att = try? SeqPacketSocket.connect(path: "\(directory)/\(address).att") else {
            pending = (peer, parameters[5])  // out of range: the host's timeout cancels it
            return
        }
        let handle = nextHandle
        nextHandle = nextHandle >= 0x0EFF ? 0x0040 : nextHandle + 1
        let source = DispatchSource.makeReadSource(fileDescriptor: att, queue: queue)
        source.setEventHandler { [weak self] in self?.readPeripheral(handle) }
        source.resume()
        links[handle] = Link(address: address, att: att, source: source)
        log.connections += 1
        event(0x3E, [0x01, 0x00] + Self.le(handle) + [0x00, parameters[5]] + peer + [0x18, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00])
    }

    /// Ends a link: `reason` nil is silent (the host is gone), else Disconnection Complete.
    private func closeLink(_ handle: UInt16, reason: UInt8?) {
        guard let link = links.removeValue(forKey: handle) else { return }
        link.source.cancel()
        SystemCalls.close(link.att)
        if let reason { event(0x05, [0x00] + Self.le(handle) + [reason]) }
    }

    private func readPeripheral(_ handle: UInt16) {
        guard let link = links[handle] else { return }
        for _ in 0..<16 {
            switch try? SeqPacketSocket.receive(link.att, capacity: 517) {
            case .wouldBlock: return
            case .done(.packet(let pdu)): sendFrame(channel: 4, pdu, on: handle)
            case .done(.truncated): continue
            case .done(.closed), nil: return closeLink(handle, reason: 0x13)  // the peripheral ended it
            }
        }
    }

    /// An L2CAP frame to the host in ACL packets of at most the buffer size: the first flushable
    /// (boundary 0b10, as controllers mark it), the rest continuations (0b01).
    private func sendFrame(channel: UInt16, _ payload: [UInt8], on handle: UInt16) {
        let frame = Self.le(UInt16(payload.count)) + Self.le(channel) + payload
        var offset = 0
        while offset < frame.count {
            let piece = Array(frame[offset..<min(offset + options.aclBufferSize, frame.count)])
            let flags: UInt16 = offset == 0 ? 0x2000 : 0x1000
            toHost([0x02] + Self.le(handle | flags) + Self.le(UInt16(piece.count)) + piece)
            offset += piece.count
        }
    }

    private func acl(_ packet: [UInt8]) {
        guard packet.count >= 5 else { return }
        let field = UInt16(packet[1]) | UInt16(packet[2]) << 8
        let handle = field & 0x0FFF
        let length = Int(UInt16(packet[3]) | UInt16(packet[4]) << 8)
        guard length == packet.count - 5, length <= options.aclBufferSize, var link = links[handle] else { return }
        log.aclPackets += 1
        let continuation = (field >> 12) & 0b11 == 0b01
        if !continuation { link.incoming = [] }
        link.incoming += packet[5...]
        // Each packet the host sent frees a buffer: Number Of Completed Packets.
        event(0x13, [0x01] + Self.le(handle) + Self.le(1))
        guard link.incoming.count >= 4 else {
            links[handle] = link
            return
        }
        let declared = Int(UInt16(link.incoming[0]) | UInt16(link.incoming[1]) << 8)
        guard link.incoming.count >= declared + 4 else {
            links[handle] = link
            return
        }
        let channel = UInt16(link.incoming[2]) | UInt16(link.incoming[3]) << 8
        let payload = Array(link.incoming[4..<(4 + declared)])
        link.incoming = []
        links[handle] = link
        switch channel {
        case 4: _ = try? SeqPacketSocket.send(link.att, payload)
        case 5: log.signaling.append(payload)
        case 6: log.securityManager.append(payload)
        default: break
        }
    }

    // MARK: bytes

    /// At most `limit` bytes of a small file (an `.adv` file is at most 62).
    static func readSmall(_ path: String, limit: Int) -> [UInt8]? {
        guard let fd = try? SystemCalls.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) else { return nil }
        defer { SystemCalls.close(fd) }
        var buffer = [UInt8](repeating: 0, count: limit)
        let count = buffer.withUnsafeMutableBytes { (try? SystemCalls.read(fd, into: $0, path)) ?? 0 }
        return Array(buffer[..<count])
    }

    static func le(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

    /// `AA:BB:CC:DD:EE:FF` → six bytes, least significant first; empty if it is not an address.
    static func addressBytes(_ text: String) -> [UInt8] {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        let bytes = parts.compactMap { $0.count == 2 ? UInt8($0, radix: 16) : nil }
        return parts.count == 6 && bytes.count == 6 ? bytes.reversed() : []
    }

    static func addressText(_ bytes: [UInt8]) -> String {
        bytes.reversed().map { byte in
            let text = String(byte, radix: 16, uppercase: true)
            return text.count == 1 ? "0" + text : text
        }.joined(separator: ":")
    }
}
