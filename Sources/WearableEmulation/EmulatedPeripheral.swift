import Dispatch
import Glibc
import SensorSystem

/// A BLE peripheral on the emulated transport: writes `ADDR.adv`, listens on the SEQPACKET socket
/// `ADDR.att` and answers real ATT PDUs from its own GATT database (Heart Rate, Device
/// Information, Battery, Polar PMD). Written independently of the BLE client (it imports nothing
/// of BLEBridge): its bytes are built here by hand from the specification layouts, so a test of
/// the client against it is not the client agreeing with itself. Tests and `sensorkit-wearable`
/// push measurements and frames through it and inject faults.
public final class EmulatedPeripheral: @unchecked Sendable {
    public struct Profile: Sendable {
        public var address: String
        public var name: String
        public var heartRate = true
        /// PMD measurement types served (0 ECG, 1 PPG, 2 ACC, 3 PPI); empty: no PMD service.
        public var pmdTypes: [UInt8] = []
        public var manufacturer = "Emulated"
        public var model: String
        public var firmware = "1.0.0"
        public var bodySensorLocation: UInt8 = 1
        public var batteryPercent: UInt8 = 87

        public static func strap(address: String = "C0:FF:EE:00:00:01") -> Profile {
            Profile(address: address, name: "HR Strap 0001", model: "Strap")
        }

        public static func h10(address: String = "C0:FF:EE:00:00:10") -> Profile {
            Profile(
                address: address, name: "Polar H10 0A0B0C0D", pmdTypes: [0, 2], manufacturer: "Polar Electro Oy", model: "H10",
                firmware: "3.1.1")
        }

        public static func veritySense(address: String = "C0:FF:EE:00:00:20") -> Profile {
            Profile(
                address: address, name: "Polar Sense 1A2B3C4D", pmdTypes: [1, 3], manufacturer: "Polar Electro Oy",
                model: "Polar Verity Sense",
                firmware: "2.2.6", bodySensorLocation: 2)
        }
    }

    /// Faults a test switches on.
    public struct Faults: Sendable {
        /// The MTU this peripheral accepts (an H10 needs ≥ 232 for PMD).
        public var serverMTU: UInt16 = 247
        /// Requests left unanswered (the client's transaction timer must fire).
        public var ignoreRequests = false
        /// Reads of characteristics with these 16-bit UUIDs fail with the given ATT error.
        public var readErrors: [UInt16: UInt8] = [:]
        public init() {}
    }

    public let profile: Profile
    public let advPath: String
    public let attPath: String
    private let queue = DispatchQueue(label: "emulated-peripheral")
    private var attributes: [PeripheralAttribute]
    private var listener: Int32 = -1
    private var connection: Int32 = -1
    private var listenSource: (any DispatchSourceRead)?
    private var connectionSource: (any DispatchSourceRead)?
    private var mtu: UInt16 = 23
    private var state = State()

    private struct State {
        var faults = Faults()
        var running: Set<UInt8> = []
        var commands: [[UInt8]] = []
        var confirmations = 0
        var connections = 0
    }

    public init(directory: String, profile: Profile) throws {
        self.profile = profile
        advPath = directory + "/" + profile.address + ".adv"
        attPath = directory + "/" + profile.address + ".att"
        attributes = Self.database(profile)
        try writeAdvertisement()
        listener = try SeqPacketSocket.listen(path: attPath)
        let source = DispatchSource.makeReadSource(fileDescriptor: listener, queue: queue)
        source.setEventHandler { [weak self] in self?.accept() }
        source.resume()
        listenSource = source
    }

    deinit {
        listenSource?.cancel()
        connectionSource?.cancel()
        if connection >= 0 { SystemCalls.close(connection) }
        if listener >= 0 { SystemCalls.close(listener) }
    }

    // MARK: - Test controls (any thread)

    public func setFaults(_ change: @escaping @Sendable (inout Faults) -> Void) {
        queue.sync { change(&state.faults) }
    }

    /// Control-point commands received, in order.
    public var commands: [[UInt8]] { queue.sync { state.commands } }
    public var runningMeasurements: Set<UInt8> { queue.sync { state.running } }
    public var confirmations: Int { queue.sync { state.confirmations } }
    public var connections: Int { queue.sync { state.connections } }
    public var isConnected: Bool { queue.sync { connection >= 0 } }

    /// Whether the CCCD of the characteristic with this UUID is set.
    public func isSubscribed(_ uuid: [UInt8]) -> Bool {
        queue.sync {
            attributes.first { $0.type == WireUUID.cccd && $0.characteristic == uuid }.map { $0.value != [0, 0] } ?? false
        }
    }

    /// Notifies a Heart Rate Measurement value (bytes as the test builds them). False when the
    /// client is not subscribed.
    @discardableResult
    public func notifyHeartRate(_ value: [UInt8]) -> Bool {
        queue.sync { notify(WireUUID.short(0x2A37), value) }
    }

    /// Sends an ECG frame type 0: each sample 3 bytes signed µV; `timestamp` stamps the last sample.
    @discardableResult
    public func sendECG(timestamp: UInt64, microvolts: [Int32]) -> Bool {
        var frame = [0x00] + Self.le64(timestamp) + [0x00]
        for value in microvolts { frame += Self.le24(value) }
        return sendFrame(frame, type: 0)
    }

    /// Sends a PPG frame, raw or delta-compressed (24-bit values): type 0 has four values a sample
    /// (three optical + ambient); the Verity Sense's wide types, sent compressed, 7 seventeen (16
    /// optical + status) and 10 twenty-one (8 green, 6 red, 6 infrared + status). The values are
    /// sent as given: the caller gives each sample the frame type's count.
    @discardableResult
    public func sendPPG(timestamp: UInt64, samples: [[Int32]], compressed: Bool, frameType: UInt8 = 0) -> Bool {
        var frame = [0x01] + Self.le64(timestamp) + [(compressed ? 0x80 : 0x00) | frameType & 0x7F]
        frame += compressed ? Self.deltaEncode(samples) : samples.flatMap { $0.flatMap(Self.le24) }
        return sendFrame(frame, type: 1)
    }

    /// Sends an ACC frame of x, y, z in mG: raw type 1 (three int16 a sample) or, as an H10
    /// streams, delta-compressed type 1 (a 16-bit reference sample, then one block of deltas).
    @discardableResult
    public func sendACC(timestamp: UInt64, samples: [[Int32]], compressed: Bool) -> Bool {
        var frame = [0x02] + Self.le64(timestamp) + [compressed ? 0x81 : 0x01]
        frame +=
            compressed
            ? Self.deltaEncode(samples, valueBytes: 2)
            : samples.flatMap { $0.flatMap { Self.le16(UInt16(truncatingIfNeeded: $0)) } }
        return sendFrame(frame, type: 2)
    }

    /// One PP interval as a PPI frame carries it.
    public struct PulseInterval: Sendable {
        public var beatsPerMinute: UInt8
        public var milliseconds: UInt16
        public var errorEstimate: UInt16
        /// Bit 0 blocker, bit 1 skin contact, bit 2 skin contact supported.
        public var flags: UInt8
        public init(beatsPerMinute: UInt8, milliseconds: UInt16, errorEstimate: UInt16, flags: UInt8) {
            self.beatsPerMinute = beatsPerMinute
            self.milliseconds = milliseconds
            self.errorEstimate = errorEstimate
            self.flags = flags
        }
    }

    /// Sends a PPI frame (type 0): 6 bytes an interval, oldest first; a Verity Sense stamps it 0.
    @discardableResult
    public func sendPPI(timestamp: UInt64 = 0, intervals: [PulseInterval]) -> Bool {
        var frame = [0x03] + Self.le64(timestamp) + [0x00]
        for interval in intervals {
            frame +=
                [interval.beatsPerMinute] + Self.le16(interval.milliseconds) + Self.le16(interval.errorEstimate) + [
                    interval.flags
                ]
        }
        return sendFrame(frame, type: 3)
    }

    /// Sends a data-characteristic notification with arbitrary bytes (malformed/truncated frames).
    @discardableResult
    public func sendRawFrame(_ bytes: [UInt8]) -> Bool {
        queue.sync { notify(WireUUID.polar(0x82), bytes) }
    }

    /// Indicates arbitrary bytes on the PMD control point (a device that stops its streams by
    /// itself, a response in endless parts). False when the client is not subscribed.
    @discardableResult
    public func indicateControlPoint(_ value: [UInt8]) -> Bool {
        queue.sync { indicate(WireUUID.polar(0x81), value) }
    }

    /// Sends one packet of arbitrary bytes (malformed PDUs).
    public func sendPacket(_ bytes: [UInt8]) {
        queue.sync { _ = transmit(bytes) }
    }

    /// Closes the link from the peripheral's side (link loss).
    public func disconnect() {
        queue.sync { dropConnection() }
    }

    /// Out of range: both entries disappear and the link drops.
    public func remove() {
        queue.sync {
            dropConnection()
            try? SystemCalls.unlink(advPath)
            try? SystemCalls.unlink(attPath)
        }
    }

    // MARK: - Serving

    private func sendFrame(_ frame: [UInt8], type: UInt8) -> Bool {
        queue.sync {
            guard state.running.contains(type) else { return false }
            return notify(WireUUID.polar(0x82), frame)
        }
    }

    private func notify(_ characteristic: [UInt8], _ value: [UInt8]) -> Bool {
        guard connection >= 0,
            let cccd = attributes.first(where: { $0.type == WireUUID.cccd && $0.characteristic == characteristic }),
            cccd.value[0] & 0x01 != 0,
            let valueAttribute = attributes.first(where: { $0.type == characteristic })
        else { return false }
        guard value.count <= Int(mtu) - 3 else { return false }
        return transmit([0x1B] + Self.le16(valueAttribute.handle) + value)
    }

    @discardableResult
    private func indicate(_ characteristic: [UInt8], _ value: [UInt8]) -> Bool {
        guard let cccd = attributes.first(where: { $0.type == WireUUID.cccd && $0.characteristic == characteristic }),
            cccd.value[0] & 0x02 != 0,
            let valueAttribute = attributes.first(where: { $0.type == characteristic })
        else { return false }
        return transmit([0x1D] + Self.le16(valueAttribute.handle) + value)
    }

    private func transmit(_ packet: [UInt8]) -> Bool {
        guard connection >= 0, case .done(let sent)? = try? SeqPacketSocket.send(connection, packet) else { return false }
        return sent == packet.count
    }

    private func accept() {
        guard case .done(let fd)? = try? SeqPacketSocket.accept(listener) else { return }
        if connection >= 0 {
            SystemCalls.close(fd)
            return
        }
        connection = fd
        mtu = 23
        state.connections += 1
        // Unbonded: a new link starts with every CCCD cleared and no stream running.
        for index in attributes.indices where attributes[index].type == WireUUID.cccd { attributes[index].value = [0, 0] }
        state.running = []
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [weak self] in self?.readable() }
        source.resume()
        connectionSource = source
    }

    private func dropConnection() {
        connectionSource?.cancel()
        connectionSource = nil
        if connection >= 0 { SystemCalls.close(connection) }
        connection = -1
        state.running = []
    }

    private func readable() {
        while connection >= 0 {
            switch try? SeqPacketSocket.receive(connection, capacity: 1024) {
            case .wouldBlock?: return
            case .done(.packet(let pdu))?, .done(.truncated(let pdu, _))?: handle(pdu)
            case .done(.closed)?, nil:
                dropConnection()
                return
            }
        }
    }

    private func handle(_ pdu: [UInt8]) {
        let opcode = pdu[0]
        if opcode == 0x1E {
            state.confirmations += 1
            return
        }
        if opcode == 0x52 { return }
        if state.faults.ignoreRequests { return }
        let response = respond(opcode, Array(pdu.dropFirst()))
        _ = transmit(response.pdu)
        response.after?()
    }

    private func error(_ opcode: UInt8, _ handle: UInt16, _ code: UInt8) -> [UInt8] {
        [0x01, opcode] + Self.le16(handle) + [code]
    }

    private func respond(_ opcode: UInt8, _ body: [UInt8]) -> (pdu: [UInt8], after: (() -> Void)?) {
        func u16(_ at: Int) -> UInt16? { body.count >= at + 2 ? UInt16(body[at]) | UInt16(body[at + 1]) << 8 : nil }
        switch opcode {
        case 0x02:
            guard body.count == 2, let clientMTU = u16(0) else { return (error(opcode, 0, 0x04), nil) }
            mtu = max(23, min(clientMTU, state.faults.serverMTU))
            return ([0x03] + Self.le16(state.faults.serverMTU), nil)
        case 0x10:
            guard let start = u16(0), let end = u16(2), body.count == 6, Array(body[4...]) == WireUUID.primaryService, start != 0,
                start <= end
            else { return (error(opcode, u16(0) ?? 0, 0x01), nil) }
            var entries: [[UInt8]] = []
            for (index, attribute) in attributes.enumerated()
            where attribute.type == WireUUID.primaryService && attribute.handle >= start && attribute.handle <= end {
                let groupEnd =
                    attributes[(index + 1)...].first { $0.type == WireUUID.primaryService }.map { $0.handle - 1 }
                    ?? attributes.last!.handle
                let entry = Self.le16(attribute.handle) + Self.le16(groupEnd) + attribute.value
                if let first = entries.first, first.count != entry.count { break }
                if 2 + (entries.count + 1) * entry.count > Int(mtu) { break }
                entries.append(entry)
            }
            guard let first = entries.first else { return (error(opcode, start, 0x0A), nil) }
            return ([0x11, UInt8(first.count)] + entries.flatMap { $0 }, nil)
        case 0x08:
            guard let start = u16(0), let end = u16(2), body.count == 6 || body.count == 20, start != 0, start <= end
            else { return (error(opcode, u16(0) ?? 0, 0x01), nil) }
            let type = Array(body[4...])
            var entries: [[UInt8]] = []
            for attribute in attributes where attribute.type == type && attribute.handle >= start && attribute.handle <= end {
                if !attribute.readable {
                    if entries.isEmpty { return (error(opcode, attribute.handle, 0x02), nil) }
                    break
                }
                let entry = Self.le16(attribute.handle) + attribute.value.prefix(Int(mtu) - 4)
                if let first = entries.first, first.count != entry.count { break }
                if 2 + (entries.count + 1) * entry.count > Int(mtu) { break }
                entries.append(entry)
            }
            guard let first = entries.first else { return (error(opcode, start, 0x0A), nil) }
            return ([0x09, UInt8(first.count)] + entries.flatMap { $0 }, nil)
        case 0x04:
            guard let start = u16(0), let end = u16(2), body.count == 4, start != 0, start <= end
            else { return (error(opcode, u16(0) ?? 0, 0x01), nil) }
            var format: UInt8 = 0
            var entries: [[UInt8]] = []
            for attribute in attributes where attribute.handle >= start && attribute.handle <= end {
                let thisFormat: UInt8 = attribute.type.count == 2 ? 1 : 2
                if format == 0 { format = thisFormat }
                if thisFormat != format { break }
                let entry = Self.le16(attribute.handle) + attribute.type
                if 2 + (entries.count + 1) * entry.count > Int(mtu) { break }
                entries.append(entry)
            }
            guard !entries.isEmpty else { return (error(opcode, start, 0x0A), nil) }
            return ([0x05, format] + entries.flatMap { $0 }, nil)
        case 0x0A, 0x0C:
            guard let handle = u16(0), body.count == (opcode == 0x0A ? 2 : 4) else { return (error(opcode, 0, 0x04), nil) }
            guard let attribute = attributes.first(where: { $0.handle == handle }) else {
                return (error(opcode, handle, 0x01), nil)
            }
            guard attribute.readable else { return (error(opcode, handle, 0x02), nil) }
            if attribute.type.count == 2,
                let code = state.faults.readErrors[UInt16(attribute.type[0]) | UInt16(attribute.type[1]) << 8]
            {
                return (error(opcode, handle, code), nil)
            }
            let offset = opcode == 0x0C ? Int(u16(2) ?? 0) : 0
            guard offset <= attribute.value.count else { return (error(opcode, handle, 0x07), nil) }
            return ([opcode + 1] + attribute.value[offset...].prefix(Int(mtu) - 1), nil)
        case 0x12:
            guard let handle = u16(0) else { return (error(opcode, 0, 0x04), nil) }
            guard let index = attributes.firstIndex(where: { $0.handle == handle }) else {
                return (error(opcode, handle, 0x01), nil)
            }
            guard attributes[index].writable else { return (error(opcode, handle, 0x03), nil) }
            let value = Array(body.dropFirst(2))
            if attributes[index].type == WireUUID.cccd {
                guard value.count == 2 else { return (error(opcode, handle, 0x0D), nil) }
                attributes[index].value = value
                return ([0x13], nil)
            }
            if attributes[index].type == WireUUID.polar(0x81) {
                state.commands.append(value)
                let reply = controlPoint(value)
                return ([0x13], { [weak self] in _ = self?.indicate(WireUUID.polar(0x81), reply) })
            }
            attributes[index].value = value
            return ([0x13], nil)
        default:
            return (error(opcode, 0, 0x06), nil)
        }
    }

    /// PMD control point: `F0 opcode type status more params`.
    private func controlPoint(_ command: [UInt8]) -> [UInt8] {
        guard command.count >= 2 else { return [0xF0, command.first ?? 0, 0, 4, 0] }
        let opcode = command[0], type = command[1] & 0x3F
        guard profile.pmdTypes.contains(type) else { return [0xF0, opcode, type, 3, 0] }
        switch opcode {
        case 0x01:
            let settings: [UInt8]
            switch type {
            case 0: settings = [0x00, 0x01, 0x82, 0x00, 0x01, 0x01, 0x0E, 0x00]
            // The H10's ACC: 25, 50, 100, 200 Hz; 16 bit; ±2, 4, 8 g.
            case 2:
                settings = [
                    0x00, 0x04, 0x19, 0x00, 0x32, 0x00, 0x64, 0x00, 0xC8, 0x00, 0x01, 0x01, 0x10, 0x00, 0x02, 0x03, 0x02,
                    0x00, 0x04, 0x00, 0x08, 0x00,
                ]
            // PPI has no settings.
            case 3: settings = []
            default: settings = [0x00, 0x01, 0x37, 0x00, 0x01, 0x01, 0x16, 0x00, 0x04, 0x01, 0x04]
            }
            return [0xF0, opcode, type, 0, 0] + settings
        case 0x02:
            if mtu < 232 { return [0xF0, opcode, type, 10, 0] }
            if state.running.contains(type) { return [0xF0, opcode, type, 6, 0] }
            state.running.insert(type)
            // ACC values are scaled by the FACTOR the START response names (settings TLV 5, a
            // float32): the H10's is 1.0, its frames already in mG.
            return [0xF0, opcode, type, 0, 0] + (type == 2 ? [0x05, 0x01, 0x00, 0x00, 0x80, 0x3F] : [])
        case 0x03:
            state.running.remove(type)
            return [0xF0, opcode, type, 0, 0]
        default:
            return [0xF0, opcode, type, 1, 0]
        }
    }

    private func writeAdvertisement() throws {
        let name = Array(profile.name.utf8)
        var uuids: [UInt8] = []
        if profile.heartRate { uuids += WireUUID.short(0x180D) }
        // Advertising data: flags + service list; scan response: the complete local name.
        var bytes: [UInt8] = [0x02, 0x01, 0x06]
        if !uuids.isEmpty { bytes += [UInt8(uuids.count + 1), 0x03] + uuids }
        bytes += [UInt8(name.count + 1), 0x09] + name
        let fd = try SystemCalls.open(advPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o644)
        defer { SystemCalls.close(fd) }
        let written = try bytes.withUnsafeBytes { (raw) throws(SystemError) in try SystemCalls.write(fd, raw, advPath) }
        guard written == bytes.count else { throw SystemError("write(\(advPath)): short", errno: EIO) }
    }

    private static func database(_ profile: Profile) -> [PeripheralAttribute] {
        var builder = PeripheralDatabaseBuilder()
        builder.service(WireUUID.short(0x180A))
        builder.characteristic(WireUUID.short(0x2A29), properties: 0x02, value: Array(profile.manufacturer.utf8))
        builder.characteristic(WireUUID.short(0x2A24), properties: 0x02, value: Array(profile.model.utf8))
        builder.characteristic(WireUUID.short(0x2A26), properties: 0x02, value: Array(profile.firmware.utf8))
        builder.service(WireUUID.short(0x180F))
        builder.characteristic(WireUUID.short(0x2A19), properties: 0x12, value: [profile.batteryPercent])
        if profile.heartRate {
            builder.service(WireUUID.short(0x180D))
            builder.characteristic(WireUUID.short(0x2A37), properties: 0x10)
            builder.characteristic(WireUUID.short(0x2A38), properties: 0x02, value: [profile.bodySensorLocation])
        }
        if !profile.pmdTypes.isEmpty {
            var features: [UInt8] = [0x0F, 0x00, 0x00]
            for type in profile.pmdTypes { features[1 + Int(type) / 8] |= 1 << (type % 8) }
            builder.service(WireUUID.polar(0x80))
            builder.characteristic(WireUUID.polar(0x81), properties: 0x2A, value: features)
            builder.characteristic(WireUUID.polar(0x82), properties: 0x10)
        }
        return builder.attributes
    }

    // MARK: - Bytes

    static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

    static func le64(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

    static func le24(_ value: Int32) -> [UInt8] {
        let bits = UInt32(bitPattern: value)
        return [UInt8(bits & 0xFF), UInt8((bits >> 8) & 0xFF), UInt8((bits >> 16) & 0xFF)]
    }

    /// The PMD delta encoding: the first sample as reference (`valueBytes` per channel), then one
    /// block `width count bits…` holding every following sample's per-channel differences, packed
    /// LSB first.
    static func deltaEncode(_ samples: [[Int32]], valueBytes: Int = 3) -> [UInt8] {
        guard let first = samples.first else { return [] }
        var bytes = first.flatMap { value in le24(value).prefix(valueBytes) }
        guard samples.count > 1 else { return bytes }
        var deltas: [Int32] = []
        for index in 1..<samples.count {
            for channel in first.indices { deltas.append(samples[index][channel] &- samples[index - 1][channel]) }
        }
        var width = 1
        while !deltas.allSatisfy({ $0 >= -(Int32(1) << (width - 1)) && $0 < (Int32(1) << (width - 1)) }) { width += 1 }
        bytes += [UInt8(width), UInt8(samples.count - 1)]
        var packed = [UInt8](repeating: 0, count: (deltas.count * width + 7) / 8)
        var position = 0
        for delta in deltas {
            let bits = UInt32(bitPattern: delta)
            for bit in 0..<width {
                if bits & (1 << UInt32(bit)) != 0 { packed[position / 8] |= 1 << UInt8(position % 8) }
                position += 1
            }
        }
        return bytes + packed
    }
}
