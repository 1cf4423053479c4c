import Glibc
import SensorSystem
import Synchronization

/// Reads scans from `/dev/iio:deviceN` without ever blocking: the fd is opened `O_NONBLOCK`,
/// every `read` goes through `nonBlockingSyscall` (EAGAIN is "nothing more now", not an error),
/// and bytes are cut into whole scans by a `ScanAssembler`, so partial reads (umockdev's PTY)
/// work as well as the kernel's whole-scan reads.
///
/// Meant to be driven by a `ReadinessLoop` running `drain` when the fd is readable. A value, so
/// that its owner keeps it in state reached as an `inout` (`IIODeviceCapture` keeps it in its
/// reading lock's state), where the compiler checks each touch instead of the runtime; the open fd
/// is a `Descriptor` object that copies share, closed once by whoever ends reading and, should
/// nobody, when the last copy goes.
/// The kernel drops **new** scans when its FIFO is full (docs/iio.md §12.5), so a reader that falls
/// behind loses data it cannot see here; the caller detects that from timestamp gaps.
public struct IIOScanReader: Sendable {
    /// The open fd: closed once (`close()`), or when nothing refers to it any more.
    public final class Descriptor: Sendable {
        public let number: Int32
        private let closed = Atomic<Bool>(false)

        init(_ number: Int32) { self.number = number }

        deinit { close() }

        /// Closes the fd (`close`); once, whoever asks first.
        public func close() {
            guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
            SystemCalls.close(number)
        }

        var isClosed: Bool { closed.load(ordering: .acquiring) }
    }

    public let layout: ScanLayout
    public let descriptor: Descriptor
    private var assembler: ScanAssembler
    private var buffer: [UInt8]

    public var fileDescriptor: Int32 { descriptor.number }

    /// Opens `devnode` (`open(O_RDONLY|O_NONBLOCK|O_CLOEXEC)`; does not block) for scans of
    /// `layout`. `readSize` bytes are read per call (rounded up to whole scans).
    public init(devnode: String, layout: ScanLayout, readSize: Int = 16_384) throws(SystemError) {
        self.layout = layout
        descriptor = Descriptor(try SystemCalls.open(devnode, O_RDONLY | O_NONBLOCK | O_CLOEXEC))
        assembler = ScanAssembler(scanBytes: layout.scanBytes)
        let scans = max(1, (readSize + layout.scanBytes - 1) / layout.scanBytes)
        buffer = [UInt8](repeating: 0, count: scans * layout.scanBytes)
    }

    /// What one `drain` did.
    public struct Drained: Hashable, Sendable {
        /// Bytes read.
        public var bytes: Int
        /// Whole scans handed to the body.
        public var scans: Int
        /// `read` returned 0: the end of a regular file (umockdev `N: …=HEX` nodes). A real
        /// IIO fd never does this; the caller stops the read source.
        public var endOfFile: Bool
    }

    /// Reads until the fd has nothing more (a short read or EAGAIN) or `maxReads` reads were made
    /// (so one busy device cannot starve its queue), calling `body` with each whole scan in stream
    /// order.
    /// Throws on real errors (ENODEV when the device is unplugged).
    public mutating func drain(maxReads: Int = 64, _ body: (UnsafeRawBufferPointer) -> Void) throws(SystemError) -> Drained {
        precondition(!descriptor.isClosed, "drain after close")
        var drained = Drained(bytes: 0, scans: 0, endOfFile: false)
        for _ in 0..<maxReads {
            let fd = fileDescriptor
            let result: Result<IOResult<Int>, SystemError> = buffer.withUnsafeMutableBytes { storage in
                do throws(SystemError) {
                    return .success(try SystemCalls.readNonBlocking(fd, into: storage, "iio fd"))
                } catch {
                    return .failure(error)
                }
            }
            guard case let .done(count) = try result.get() else { break }
            if count == 0 {
                drained.endOfFile = true
                break
            }
            drained.bytes += count
            buffer.withUnsafeBytes { storage in
                assembler.feed(UnsafeRawBufferPointer(rebasing: storage[0..<count])) { scan in
                    drained.scans += 1
                    body(scan)
                }
            }
            // A short read took everything queued (an IIO buffer hands over all it has, up to
            // the size asked for): asking again would only be told EAGAIN, one syscall per
            // wake-up for nothing. Whatever arrives meanwhile makes the fd readable again.
            if count < buffer.count { break }
        }
        return drained
    }

    /// Bytes of a scan begun but not finished.
    public var pendingByteCount: Int {
        assembler.pendingByteCount
    }

    /// Closes the fd (`close`), once nothing reads it any more (the reading thread closes it as it
    /// leaves: `ReadinessLoop`'s `onExit`). Every copy's fd is the same one.
    public func close() { descriptor.close() }
}
