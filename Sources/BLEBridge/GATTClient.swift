/// The ATT/GATT client as a value: it is handed PDUs, operations and timer expiries, and answers
/// with actions (PDUs to send, the request timer to arm or stop, events for the owner). It owns no
/// socket and reads no clock, so every path is tested without either. Rules (docs/ble.md, "ATT/GATT
/// client"): one request outstanding at a time, each under the transaction timer; the MTU is
/// exchanged first, then services, characteristics and descriptors are discovered; indications
/// are confirmed; requests from the peer are refused with Request Not Supported; after a timeout
/// or a broken response the link is unusable and must be dropped.
public struct GATTClient: Sendable {
    public typealias OperationID = UInt32

    public enum Action: Equatable, Sendable {
        case send([UInt8])
        /// (Re)arm the transaction timer: `timedOut()` if it fires before the next `stopTimer`.
        case startTimer
        case stopTimer
        case event(Event)
    }

    public enum Event: Equatable, Sendable {
        case mtuExchanged(Int)
        case discovered([GATTService])
        case readCompleted(OperationID, handle: UInt16, value: [UInt8])
        case writeCompleted(OperationID, handle: UInt16)
        case operationFailed(OperationID, handle: UInt16, error: ATTErrorCode)
        case notification(handle: UInt16, value: [UInt8])
        case indication(handle: UInt16, value: [UInt8])
        /// A PDU that was not understood and was dropped (counted by the owner).
        case ignoredPDU(String)
        /// The link must be closed: a request timed out, or the peer broke the protocol.
        case linkFailed(String)
    }

    /// Characteristic properties (Core Vol 3 Part G §3.3.1.1).
    public struct Properties: OptionSet, Hashable, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let read = Properties(rawValue: 0x02)
        public static let writeWithoutResponse = Properties(rawValue: 0x04)
        public static let write = Properties(rawValue: 0x08)
        public static let notify = Properties(rawValue: 0x10)
        public static let indicate = Properties(rawValue: 0x20)
    }

    /// Bounds on what a peer can make the client hold.
    public static let maximumServices = 32
    public static let maximumCharacteristicsPerService = 32
    public static let maximumDescriptorsPerCharacteristic = 8
    public static let maximumValueLength = 512
    public static let maximumQueuedOperations = 64

    public let preferredMTU: UInt16
    public private(set) var mtu = ATTPDU.defaultMTU
    public private(set) var services: [GATTService] = []
    public private(set) var isReady = false
    public private(set) var isFailed = false

    private enum Pending: Sendable {
        case mtu
        case services(next: UInt16)
        case characteristics(service: Int, next: UInt16)
        case descriptors(service: Int, characteristic: Int, next: UInt16)
        case read(OperationID, handle: UInt16, value: [UInt8])
        case write(OperationID, handle: UInt16)
    }

    private enum Operation: Sendable {
        case read(OperationID, handle: UInt16)
        case write(OperationID, handle: UInt16, value: [UInt8])
    }

    private var pending: Pending?
    private var queue: [Operation] = []
    private var nextID: OperationID = 1

    public init(preferredMTU: UInt16 = 247) {
        self.preferredMTU = max(UInt16(ATTPDU.defaultMTU), min(preferredMTU, UInt16(ATTPDU.maximumMTU)))
    }

    /// Begins the connection: MTU exchange, then discovery; `.discovered` reports the database.
    public mutating func start() -> [Action] {
        request(.mtu, .exchangeMTURequest(clientReceiveMTU: preferredMTU))
    }

    /// Queues a read of `handle` (long values are read on with Read Blob).
    public mutating func read(_ handle: UInt16) -> (OperationID, [Action]) {
        enqueue { .read($0, handle: handle) }
    }

    /// Queues a Write Request (answered by a Write Response or an Error Response).
    public mutating func write(_ handle: UInt16, value: [UInt8]) -> (OperationID, [Action]) {
        enqueue { .write($0, handle: handle, value: value) }
    }

    /// Queues the CCCD write that subscribes to `characteristic`: indications when that is all it
    /// offers, else notifications. Nil when it has neither or no CCCD.
    public mutating func subscribe(_ characteristic: GATTCharacteristic) -> (OperationID, [Action])? {
        guard let cccd = characteristic.cccdHandle else { return nil }
        let value: [UInt8]
        if characteristic.properties.contains(.notify) {
            value = [0x01, 0x00]
        } else if characteristic.properties.contains(.indicate) {
            value = [0x02, 0x00]
        } else {
            return nil
        }
        return write(cccd, value: value)
    }

    /// The transaction timer fired with a request still outstanding.
    public mutating func timedOut() -> [Action] {
        guard !isFailed, pending != nil else { return [] }
        return fail("request timed out")
    }

    /// One PDU from the peer.
    public mutating func received(_ bytes: [UInt8]) -> [Action] {
        guard !isFailed else { return [] }
        let pdu: ATTPDU
        do {
            pdu = try ATTPDU(decoding: bytes)
        } catch {
            // A request we do not implement must still be answered, or the peer waits forever.
            if let opcode = bytes.first, Self.isRequest(opcode) {
                return [
                    .send(ATTPDU.errorResponse(requestOpcode: opcode, handle: 0, error: .requestNotSupported).encoded()),
                    .event(.ignoredPDU("request 0x\(String(opcode, radix: 16))")),
                ]
            }
            return [.event(.ignoredPDU("\(error)"))]
        }
        switch pdu {
        case .handleValueNotification(let handle, let value):
            return [.event(.notification(handle: handle, value: value))]
        case .handleValueIndication(let handle, let value):
            return [.send(ATTPDU.handleValueConfirmation.encoded()), .event(.indication(handle: handle, value: value))]
        case .exchangeMTURequest, .findInformationRequest, .readByTypeRequest, .readRequest, .readBlobRequest,
            .readByGroupTypeRequest, .writeRequest:
            return [
                .send(ATTPDU.errorResponse(requestOpcode: pdu.opcode.rawValue, handle: 0, error: .requestNotSupported).encoded())
            ]
        case .writeCommand, .handleValueConfirmation:
            return [.event(.ignoredPDU("unexpected \(pdu.opcode)"))]
        default:
            return response(pdu)
        }
    }

    private static func isRequest(_ opcode: UInt8) -> Bool {
        opcode & 0x40 == 0 && opcode & 0x01 == 0 && opcode != ATTPDU.Opcode.handleValueConfirmation.rawValue
    }

    // MARK: - Requests

    private mutating func enqueue(_ make: (OperationID) -> Operation) -> (OperationID, [Action]) {
        let id = nextID
        nextID &+= 1
        guard !isFailed else { return (id, []) }
        guard queue.count < Self.maximumQueuedOperations else {
            return (id, [.event(.operationFailed(id, handle: 0, error: .insufficientResources))])
        }
        queue.append(make(id))
        return (id, pending == nil && isReady ? startNext() : [])
    }

    private mutating func request(_ state: Pending, _ pdu: ATTPDU) -> [Action] {
        pending = state
        return [.send(pdu.encoded()), .startTimer]
    }

    private mutating func startNext() -> [Action] {
        guard !queue.isEmpty else {
            pending = nil
            return [.stopTimer]
        }
        switch queue.removeFirst() {
        case .read(let id, let handle):
            return request(.read(id, handle: handle, value: []), .readRequest(handle: handle))
        case .write(let id, let handle, let value):
            guard value.count <= mtu - 3 else {
                return [.event(.operationFailed(id, handle: handle, error: .invalidAttributeValueLength))] + startNext()
            }
            return request(.write(id, handle: handle), .writeRequest(handle: handle, value: value))
        }
    }

    private mutating func fail(_ why: String) -> [Action] {
        isFailed = true
        pending = nil
        queue.removeAll()
        return [.stopTimer, .event(.linkFailed(why))]
    }

    // MARK: - Responses

    private mutating func response(_ pdu: ATTPDU) -> [Action] {
        guard let pending else { return [.event(.ignoredPDU("unsolicited \(pdu.opcode)"))] }
        if case .errorResponse(let requestOpcode, let handle, let error) = pdu {
            guard requestOpcode == Self.requestOpcode(of: pending) else {
                return [.event(.ignoredPDU("error response to 0x\(String(requestOpcode, radix: 16))"))]
            }
            return errorResponse(pending, handle: handle, error: error)
        }
        switch (pending, pdu) {
        case (.mtu, .exchangeMTUResponse(let serverMTU)):
            mtu = max(ATTPDU.defaultMTU, min(Int(preferredMTU), Int(serverMTU)))
            return [.event(.mtuExchanged(mtu))] + discoverServices(from: 1)
        case (.services(let next), .readByGroupTypeResponse(let groups)):
            return servicesFound(groups, requestedFrom: next)
        case (.characteristics(let service, let next), .readByTypeResponse(let entries)):
            return characteristicsFound(entries, service: service, requestedFrom: next)
        case (.descriptors(let service, let characteristic, let next), .findInformationResponse(let entries)):
            return descriptorsFound(entries, service: service, characteristic: characteristic, requestedFrom: next)
        case (.read(let id, let handle, let sofar), .readResponse(let value)),
            (.read(let id, let handle, let sofar), .readBlobResponse(let value)):
            let total = sofar + value
            // A full PDU may mean the value goes on (Core Vol 3 Part G §4.8.3): read on from there.
            if value.count == mtu - 1, total.count < Self.maximumValueLength {
                return request(
                    .read(id, handle: handle, value: total), .readBlobRequest(handle: handle, offset: UInt16(total.count)))
            }
            return [.event(.readCompleted(id, handle: handle, value: Array(total.prefix(Self.maximumValueLength))))] + startNext()
        case (.write(let id, let handle), .writeResponse):
            return [.event(.writeCompleted(id, handle: handle))] + startNext()
        default:
            return [.event(.ignoredPDU("\(pdu.opcode) does not answer the outstanding request"))]
        }
    }

    private static func requestOpcode(of pending: Pending) -> UInt8 {
        let opcode: ATTPDU.Opcode
        switch pending {
        case .mtu: opcode = .exchangeMTURequest
        case .services: opcode = .readByGroupTypeRequest
        case .characteristics: opcode = .readByTypeRequest
        case .descriptors: opcode = .findInformationRequest
        case .read(_, _, let sofar): opcode = sofar.isEmpty ? .readRequest : .readBlobRequest
        case .write: opcode = .writeRequest
        }
        return opcode.rawValue
    }

    private mutating func errorResponse(_ pending: Pending, handle: UInt16, error: ATTErrorCode) -> [Action] {
        switch pending {
        case .mtu:
            // A server without MTU exchange keeps the default MTU.
            return [.event(.mtuExchanged(mtu))] + discoverServices(from: 1)
        case .services:
            return discoverCharacteristics(service: 0, from: nil)
        case .characteristics(let service, _):
            return discoverCharacteristics(service: service + 1, from: nil)
        case .descriptors(let service, let characteristic, _):
            return discoverDescriptors(service: service, characteristic: characteristic + 1, from: nil)
        case .read(let id, let readHandle, let sofar):
            // Attribute Not Long after a full first read: the value was exactly one PDU long.
            if !sofar.isEmpty, error == .attributeNotLong || error == .invalidOffset {
                return [.event(.readCompleted(id, handle: readHandle, value: sofar))] + startNext()
            }
            return [.event(.operationFailed(id, handle: readHandle, error: error))] + startNext()
        case .write(let id, let writeHandle):
            return [.event(.operationFailed(id, handle: writeHandle, error: error))] + startNext()
        }
    }

    // MARK: - Discovery

    private mutating func discoverServices(from start: UInt16) -> [Action] {
        request(.services(next: start), .readByGroupTypeRequest(start: start, end: 0xFFFF, type: .primaryService))
    }

    private mutating func servicesFound(_ groups: [ATTPDU.GroupValue], requestedFrom next: UInt16) -> [Action] {
        var last = next
        for group in groups {
            guard group.start >= next, group.end >= group.start, group.start > (services.last?.end ?? 0) || services.isEmpty,
                let uuid = BluetoothUUID(littleEndian: group.value[...])
            else { return fail("malformed service discovery response") }
            guard services.count < Self.maximumServices else { break }
            services.append(GATTService(uuid: uuid, start: group.start, end: group.end, characteristics: []))
            last = group.end
        }
        if last == 0xFFFF || services.count >= Self.maximumServices { return discoverCharacteristics(service: 0, from: nil) }
        return discoverServices(from: last + 1)
    }

    private mutating func discoverCharacteristics(service: Int, from start: UInt16?) -> [Action] {
        guard service < services.count else { return discoverDescriptors(service: 0, characteristic: 0, from: nil) }
        let range = services[service]
        let first = start ?? range.start
        guard first <= range.end, first >= range.start else { return discoverCharacteristics(service: service + 1, from: nil) }
        return request(
            .characteristics(service: service, next: first),
            .readByTypeRequest(start: first, end: range.end, type: .characteristicDeclaration))
    }

    private mutating func characteristicsFound(_ entries: [ATTPDU.HandleValue], service: Int, requestedFrom next: UInt16)
        -> [Action]
    {
        var last = next
        for entry in entries {
            guard entry.handle >= next, entry.handle <= services[service].end, entry.value.count == 5 || entry.value.count == 19,
                let uuid = BluetoothUUID(littleEndian: entry.value[3...])
            else { return fail("malformed characteristic discovery response") }
            let valueHandle = UInt16(entry.value[1]) | UInt16(entry.value[2]) << 8
            guard valueHandle > entry.handle, valueHandle <= services[service].end else {
                return fail("characteristic value handle out of its service")
            }
            if services[service].characteristics.count < Self.maximumCharacteristicsPerService {
                services[service].characteristics.append(
                    GATTCharacteristic(
                        uuid: uuid, declarationHandle: entry.handle, valueHandle: valueHandle,
                        properties: Properties(rawValue: entry.value[0]), descriptors: []))
            }
            last = entry.handle
        }
        guard last < services[service].end else { return discoverCharacteristics(service: service + 1, from: nil) }
        return discoverCharacteristics(service: service, from: last + 1)
    }

    /// The handles after a characteristic's value that hold its descriptors.
    private func descriptorRange(service: Int, characteristic: Int) -> ClosedRange<UInt16>? {
        let characteristics = services[service].characteristics
        let first = characteristics[characteristic].valueHandle &+ 1
        let last =
            characteristic + 1 < characteristics.count
            ? characteristics[characteristic + 1].declarationHandle &- 1 : services[service].end
        guard first > characteristics[characteristic].valueHandle, first <= last else { return nil }
        return first...last
    }

    private mutating func discoverDescriptors(service: Int, characteristic: Int, from start: UInt16?) -> [Action] {
        guard service < services.count else {
            isReady = true
            pending = nil
            return [.event(.discovered(services))] + startNext()
        }
        guard characteristic < services[service].characteristics.count else {
            return discoverDescriptors(service: service + 1, characteristic: 0, from: nil)
        }
        guard let range = descriptorRange(service: service, characteristic: characteristic),
            (start ?? range.lowerBound) <= range.upperBound
        else { return discoverDescriptors(service: service, characteristic: characteristic + 1, from: nil) }
        let first = start ?? range.lowerBound
        return request(
            .descriptors(service: service, characteristic: characteristic, next: first),
            .findInformationRequest(start: first, end: range.upperBound))
    }

    private mutating func descriptorsFound(
        _ entries: [ATTPDU.HandleUUID], service: Int, characteristic: Int, requestedFrom next: UInt16
    ) -> [Action] {
        guard let range = descriptorRange(service: service, characteristic: characteristic) else {
            return discoverDescriptors(service: service, characteristic: characteristic + 1, from: nil)
        }
        var last = next
        for entry in entries {
            guard entry.handle >= next, range.contains(entry.handle) else { return fail("descriptor handle out of range") }
            if services[service].characteristics[characteristic].descriptors.count < Self.maximumDescriptorsPerCharacteristic {
                services[service].characteristics[characteristic].descriptors.append(entry)
            }
            last = entry.handle
        }
        guard last < range.upperBound else {
            return discoverDescriptors(service: service, characteristic: characteristic + 1, from: nil)
        }
        return discoverDescriptors(service: service, characteristic: characteristic, from: last + 1)
    }
}

public struct GATTService: Equatable, Sendable {
    public var uuid: BluetoothUUID
    public var start: UInt16
    public var end: UInt16
    public var characteristics: [GATTCharacteristic]

    public func characteristic(_ uuid: BluetoothUUID) -> GATTCharacteristic? {
        characteristics.first { $0.uuid == uuid }
    }
}

public struct GATTCharacteristic: Equatable, Sendable {
    public var uuid: BluetoothUUID
    public var declarationHandle: UInt16
    public var valueHandle: UInt16
    public var properties: GATTClient.Properties
    public var descriptors: [ATTPDU.HandleUUID]

    /// The Client Characteristic Configuration descriptor, if it has one.
    public var cccdHandle: UInt16? {
        descriptors.first { $0.uuid == .clientCharacteristicConfiguration }?.handle
    }
}

extension [GATTService] {
    public func service(_ uuid: BluetoothUUID) -> GATTService? { first { $0.uuid == uuid } }
}

extension ATTErrorCode {
    public static let insufficientResources = ATTErrorCode(rawValue: 0x11)
    public static let invalidAttributeValueLength = ATTErrorCode(rawValue: 0x0D)
}
