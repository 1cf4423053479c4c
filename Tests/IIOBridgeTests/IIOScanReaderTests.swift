import Dispatch
import Foundation
import SensorTestKit
import Synchronization
import Testing

@testable import IIOBridge

/// The reader on a FIFO standing in for `/dev/iio:deviceN`: bytes arrive in random chunks, as
/// from umockdev's PTY, and a `DispatchSourceRead` drives `drain` as in the daemon.
@Suite struct IIOScanReaderTests {
    let fifo: String

    init() throws {
        fifo = NSTemporaryDirectory() + "/iio-fifo-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        #expect(mkfifo(fifo, 0o600) == 0)
    }

    static func layout() throws -> ScanLayout {
        let s16 = try ScanType(parsing: "le:s16/16>>0")
        return try ScanLayout(
            elements: (0..<3).map { ScanElementSpec(channel: "c\($0)", index: $0, type: s16) },
            timestamp: ScanElementSpec(channel: "in_timestamp", index: 3, type: try ScanType(parsing: "le:s64/64>>0")))
    }

    @Test func drainsWholeScansFromRandomChunksThroughADispatchSource() throws {
        defer { unlink(fifo) }
        let layout = try Self.layout()
        let queue = DispatchQueue(label: "iio-reader-test")
        // Confined to the queue, which runs the handler and the checks after it.
        nonisolated(unsafe) var reader = try IIOScanReader(devnode: fifo, layout: layout, readSize: 100)
        let writer = open(fifo, O_WRONLY | O_CLOEXEC)
        #expect(writer >= 0)
        defer { close(writer) }

        let count = 2000
        let scans = (0..<count).map { n in
            ScanEncoder.encode(layout, values: [Int64(n % 1000), -Int64(n % 700), 3], timestamp: 1_000 + Int64(n) * 2_500_000)
        }
        let decoder = ScanDecoder(layout: layout)
        let received = Mutex<[Int64]>([])  // timestamps
        let done = DispatchSemaphore(value: 0)
        let source = DispatchSource.makeReadSource(fileDescriptor: reader.fileDescriptor, queue: queue)
        source.setEventHandler {
            let drained = try? reader.drain { scan in
                let timestamp = decoder.decode(scan).timestamp!
                let total = received.withLock {
                    $0.append(timestamp); return $0.count
                }
                if total == count { done.signal() }
            }
            #expect(drained != nil)
        }
        source.resume()

        var random = SeededGenerator(seed: 7)
        var bytes = scans.flatMap { $0 }[...]
        while !bytes.isEmpty {
            let size = min(bytes.count, Int(random.next() % 97) + 1)
            let written = bytes.prefix(size).withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }
            #expect(written == size)
            bytes = bytes.dropFirst(size)
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        source.cancel()
        queue.sync {
            #expect(reader.pendingByteCount == 0)
            reader.close()
        }
        #expect(received.withLock { $0 } == (0..<count).map { 1_000 + Int64($0) * 2_500_000 })
    }

    @Test func emptyFifoWouldBlockAndClosedWriterIsEndOfFile() throws {
        defer { unlink(fifo) }
        let queue = DispatchQueue(label: "iio-reader-test-2")
        var reader = try IIOScanReader(devnode: fifo, layout: try Self.layout())
        let writer = open(fifo, O_WRONLY | O_CLOEXEC)
        queue.sync {
            // Writer open, nothing written: EAGAIN is "nothing now", not an error, and not EOF.
            #expect((try? reader.drain { _ in }) == .init(bytes: 0, scans: 0, endOfFile: false))
            let partial = [UInt8](repeating: 1, count: 10)
            _ = partial.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }
            #expect((try? reader.drain { _ in }) == .init(bytes: 10, scans: 0, endOfFile: false))
            #expect(reader.pendingByteCount == 10)
            close(writer)
            #expect((try? reader.drain { _ in })?.endOfFile == true)
            reader.close()
        }
    }

    @Test func copiesShareOneFdClosedOnceWhoeverClosesIt() throws {
        defer { unlink(fifo) }
        let reader = try IIOScanReader(devnode: fifo, layout: try Self.layout())
        var copy = reader
        let writer = open(fifo, O_WRONLY | O_CLOEXEC)
        defer { close(writer) }
        #expect(copy.fileDescriptor == reader.fileDescriptor)
        #expect((try? copy.drain { _ in }) == .init(bytes: 0, scans: 0, endOfFile: false))
        #expect(!reader.descriptor.isClosed)
        reader.close()
        #expect(copy.descriptor.isClosed)
        copy.close()  // a second close does nothing (the number may be someone else's by now)
    }

    @Test func theFdClosesWhenTheLastCopyGoes() throws {
        defer { unlink(fifo) }
        weak var descriptor: IIOScanReader.Descriptor?
        do {
            let reader = try IIOScanReader(devnode: fifo, layout: try Self.layout())
            descriptor = reader.descriptor
            #expect(descriptor?.isClosed == false)
        }
        #expect(descriptor == nil)
    }

    @Test func missingDeviceNodeIsAnError() throws {
        defer { unlink(fifo) }
        #expect(throws: (any Error).self) {
            try IIOScanReader(devnode: "/nonexistent/iio:device9", layout: try Self.layout())
        }
    }
}
