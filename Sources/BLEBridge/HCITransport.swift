import Dispatch
import Glibc
import SensorSystem
import Synchronization
import SystemBus

/// The radio: HCI LE scanning on one adapter through libbluetooth, and the ATT bearer over an
/// L2CAP LE socket (docs/ble.md, "The radio transport"). One lock serialises scan passes and
/// connects, so the controller never scans while it connects.
public final class HCITransport: BLETransport {
    public struct Options: Sendable {
        /// How long one `scan()` listens; at most 1 s (the driver calls it about once a second).
        public var scanDurationMilliseconds: Int32 = 1000
        public var scanParameters = HCIScanParameters()
        /// How long `connect` waits for the link (the kernel's own limit is 40 s).
        public var connectTimeoutMilliseconds: Int32 = 10_000
        public var security = L2CAPSecurityLevel.low
        /// Devices kept per pass; more are counted in `droppedDevices`.
        public var maximumDevices = 128
        /// How long libbluetooth waits for the controller to answer one command.
        public var commandTimeoutMilliseconds: Int32 = 1000
        public init() {}
    }

    public let adapter: String
    /// The adapter's own address (the local end of every L2CAP link).
    public let adapterAddress: String
    public let options: Options
    private let fd: Int32
    /// Held for a whole scan pass or connect: one radio operation at a time.
    private let radio = Mutex(())
    private let counters = Mutex(Counters())

    public struct Counters: Equatable, Sendable {
        /// HCI events that were not well-formed advertising reports.
        public var malformedEvents = 0
        /// Devices beyond `maximumDevices` in one pass.
        public var droppedDevices = 0
    }

    public var statistics: Counters { counters.withLock { $0 } }

    private init(adapter: String, adapterAddress: String, options: Options, fd: Int32) {
        self.adapter = adapter
        self.adapterAddress = adapterAddress
        self.options = options
        self.fd = fd
    }

    deinit { HCILibrary.closeAdapter(fd) }

    /// Opens adapter `hciN`. No Bluetooth in the kernel, no such adapter, or an adapter that is
    /// down is `.unavailable`; the error says which and what to do. An adapter bluetoothd manages
    /// (asked on `bus`) is refused with `.busy` and the fix, before the kernel is touched.
    public static func open(adapter: String, options: Options = Options(), bus: DBusBus = .system) throws(BLETransportError)
        -> HCITransport
    {
        guard let index = adapterIndex(adapter) else {
            throw .failed("Bluetooth adapter name \"\(adapter)\" is not of the form hci0, hci1, …")
        }
        let presence = BluetoothdPresence.probe(adapter: adapter, bus: bus)
        let bluetoothd = BluetoothdPresence.processRunning()
        if let refusal = BluetoothdPresence.hciRefusal(
            adapter: adapter, presence: presence, processRunning: bluetoothd, adapterUp: nil)
        {
            throw .busy(refusal)
        }
        let fd: Int32
        do { fd = try HCILibrary.openAdapter(index) } catch { throw transportError(error, adapter: adapter) }
        do {
            let info = try HCILibrary.adapterInfo(index)
            if let refusal = BluetoothdPresence.hciRefusal(
                adapter: adapter, presence: presence, processRunning: bluetoothd, adapterUp: info.isUp)
            {
                HCILibrary.closeAdapter(fd)
                throw BLETransportError.busy(refusal)
            }
            guard info.isUp else {
                HCILibrary.closeAdapter(fd)
                throw BLETransportError.unavailable(
                    "\(adapter) is powered off; power it on (`bluetoothctl power on`) and restart")
            }
            return HCITransport(adapter: adapter, adapterAddress: info.address, options: options, fd: fd)
        } catch let error as SystemError {
            HCILibrary.closeAdapter(fd)
            throw transportError(error, adapter: adapter)
        } catch let error as BLETransportError {
            throw error
        } catch {
            HCILibrary.closeAdapter(fd)
            throw .failed("\(adapter): \(error)")
        }
    }

    /// One bounded scan pass: every device heard, advertising data and scan response merged per
    /// address, in the order first heard. Filtering is the caller's.
    public func scan() throws(BLETransportError) -> [BLEScanReport] {
        var collector = HCIScanCollector(capacity: options.maximumDevices)
        defer {
            counters.withLock {
                $0.malformedEvents += collector.malformedEvents
                $0.droppedDevices += collector.droppedDevices
            }
        }
        do {
            try radio.withLock { (_) throws(SystemError) in try listen(into: &collector) }
        } catch {
            throw Self.transportError(error, adapter: adapter)
        }
        return collector.reports
    }

    public func connect(
        _ report: BLEScanReport, queue: DispatchQueue, onEvent: @escaping @Sendable (GATTLinkEvent) -> Void
    ) throws(BLETransportError) -> any GATTLink {
        do {
            return ATTGATTLink.open(bearer: try connect(report), queue: queue, onEvent: onEvent)
        } catch {
            throw ATTGATTLink.transportError(error)
        }
    }

    /// The ATT bearer alone: an L2CAP LE socket on the ATT channel to the report's address.
    public func connect(_ report: BLEScanReport) throws(ATTBearerError) -> any ATTBearer {
        try radio.withLock { (_) throws(ATTBearerError) in
            try L2CAPATTChannel.connect(
                adapterAddress: adapterAddress, to: report, security: options.security,
                timeoutMilliseconds: options.connectTimeoutMilliseconds)
        }
    }

    private func listen(into collector: inout HCIScanCollector) throws(SystemError) {
        let timeout = options.commandTimeoutMilliseconds
        // A scan left on (by us, a killed scanner or another stack) makes the controller refuse new
        // parameters: turn it off first. A controller that was not scanning may refuse that too.
        try? HCILibrary.setScanEnable(fd, false, filterDuplicates: false, timeoutMilliseconds: timeout)
        try HCILibrary.setScanParameters(fd, options.scanParameters, timeoutMilliseconds: timeout)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: HCILibrary.maximumEventSize, alignment: 1)
        defer { buffer.deallocate() }
        try HCILibrary.withLEMetaEventFilter(fd) { () throws(SystemError) in
            try HCILibrary.setScanEnable(
                fd, true, filterDuplicates: options.scanParameters.filterDuplicates, timeoutMilliseconds: timeout)
            defer { try? HCILibrary.setScanEnable(fd, false, filterDuplicates: false, timeoutMilliseconds: timeout) }
            let duration = Int64(min(max(options.scanDurationMilliseconds, 1), 1000)) * 1_000_000
            let deadline = try SystemCalls.clockNanoseconds(CLOCK_MONOTONIC) &+ duration
            while true {
                let remaining = deadline &- (try SystemCalls.clockNanoseconds(CLOCK_MONOTONIC))
                guard remaining > 0 else { return }
                let ready = try SystemCalls.poll(
                    fd, events: Int16(POLLIN), timeoutMilliseconds: Int32((remaining + 999_999) / 1_000_000))
                guard ready != 0 else { continue }
                let count = try SystemCalls.read(fd, into: buffer, adapter)
                collector.add(event: Array(buffer[..<count]))
            }
        }
    }

    /// `hciN` → N (0…65534; 65535 is libbluetooth's "no device").
    static func adapterIndex(_ name: String) -> Int32? {
        guard name.hasPrefix("hci"), let digits = Optional(name.dropFirst(3)), !digits.isEmpty, digits.allSatisfy(\.isASCII),
            digits.allSatisfy(\.isNumber), digits.count <= 5, let index = Int32(digits), index < 0xFFFF
        else { return nil }
        return index
    }

    /// What a failed HCI call means, in one sentence with what to do about it.
    static func transportError(_ error: SystemError, adapter: String) -> BLETransportError {
        switch error.errno {
        case EAFNOSUPPORT:
            .unavailable(
                "this kernel has no Bluetooth support (\(error.call) failed with EAFNOSUPPORT), so no BLE wearable can be recorded here"
            )
        case ENODEV, ENXIO:
            .unavailable("there is no Bluetooth adapter \(adapter) (\(error))")
        case ENETDOWN:
            .unavailable("\(adapter) is powered off (\(error)); power it on (`bluetoothctl power on`)")
        case EBUSY:
            .busy(
                "another Bluetooth stack holds \(adapter) (\(error)); stop it (for bluetoothd: `bluetoothctl scan off`, or stop bluetooth.service) and the next scan retries"
            )
        case EIO:
            .busy(
                "\(adapter) refused the LE scan command (\(error)), usually because another stack (bluetoothd's discovery, a killed scanner) is scanning; stop it (`bluetoothctl scan off`) and the next scan retries"
            )
        case EPERM, EACCES:
            .failed(
                "\(error.call) was refused (\(error)): LE scanning needs CAP_NET_RAW (and powering an adapter CAP_NET_ADMIN); grant them with `AmbientCapabilities=CAP_NET_RAW CAP_NET_ADMIN` in the service unit or `setcap cap_net_raw,cap_net_admin+eip` on the binary"
            )
        default:
            .failed("\(adapter): \(error)")
        }
    }
}
