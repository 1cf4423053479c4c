import Glibc
import SensorChunks
import SensorKitModel
import SensorSystem

/// A stream's staged samples (`SampleStaging`): the samples a source holds and has not handed
/// over, mirrored into `<state-dir>/store.staged.<stream>` as it reads them, so that a killed
/// daemon loses none of them (docs/store.md, "Staged samples"). The file is a fixed header and
/// `capacity` rows of `2 + columns` little-endian Int64 each (sensor time, receive time in
/// boot-clock ns, then the values); the source writes the samples and then publishes their count.
/// The writer replays a file left by a crash at open (`replayStaged`) and removes it.
final class StagedSamplesFile: SampleStaging, @unchecked Sendable {
    // @unchecked: the mapping is written by the source's one thread at a time.
    static let magic: UInt32 = 0x5453_4B53  // "SKST"
    static let version: UInt32 = 1
    static let headerSize = 128
    /// Offsets of the header's fields.
    enum Field: Int {
        case magicAndVersion = 0, stream = 8, anchor = 16, capacity = 24, columns = 32, continuing = 40, count = 48
        case boot = 64  // the boot id, UTF-8, zero-padded to 64 bytes
    }
    static let maxCapacity = 1 << 20
    static let maxColumns = 1024
    /// `continuing` when nothing is: a replay leaves the samples out.
    static let noContinuation = Int64.min

    let mapping: SharedFileMapping
    let stream: StreamID
    let capacity: Int
    let slots: UnsafeMutablePointer<Int64>

    static func path(directory: String, stream: StreamID) -> String { directory + "/store.staged.\(stream.rawValue)" }

    static func size(capacity: Int, columns: Int) -> Int? {
        let (cells, overflow) = (columns + 2).multipliedReportingOverflow(by: capacity)
        let (bytes, tooMany) = cells.multipliedReportingOverflow(by: 8)
        guard !overflow, !tooMany else { return nil }
        return bytes.addingReportingOverflow(headerSize).overflow ? nil : headerSize + bytes
    }

    /// Creates (or takes over and empties) the stream's file for samples of `boot`, whose SR
    /// time is boot-clock time plus `anchor`.
    init(directory: String, stream: StreamID, boot: BootID, anchor: Int64, capacity: Int, columns: Int) throws {
        precondition((1...Self.maxCapacity).contains(capacity) && (1...Self.maxColumns).contains(columns))
        let mapping = try SharedFileMapping(
            path: Self.path(directory: directory, stream: stream), size: Self.size(capacity: capacity, columns: columns)!)
        self.mapping = mapping
        self.stream = stream
        self.capacity = capacity
        slots = mapping.base.advanced(by: Self.headerSize).assumingMemoryBound(to: Int64.self)
        let base = mapping.base
        base.storeBytes(of: Int64(0).littleEndian, toByteOffset: Field.count.rawValue, as: Int64.self)
        base.storeBytes(
            of: (UInt64(Self.version) << 32 | UInt64(Self.magic)).littleEndian, toByteOffset: Field.magicAndVersion.rawValue,
            as: UInt64.self)
        base.storeBytes(of: stream.rawValue.littleEndian, toByteOffset: Field.stream.rawValue, as: Int64.self)
        base.storeBytes(of: anchor.littleEndian, toByteOffset: Field.anchor.rawValue, as: Int64.self)
        base.storeBytes(of: Int64(capacity).littleEndian, toByteOffset: Field.capacity.rawValue, as: Int64.self)
        base.storeBytes(of: Int64(columns).littleEndian, toByteOffset: Field.columns.rawValue, as: Int64.self)
        base.storeBytes(of: Self.noContinuation.littleEndian, toByteOffset: Field.continuing.rawValue, as: Int64.self)
        let id = Array(boot.rawValue.utf8.prefix(64))
        for offset in 0..<64 {
            base.storeBytes(of: offset < id.count ? id[offset] : 0, toByteOffset: Field.boot.rawValue + offset, as: UInt8.self)
        }
    }

    /// The count last published.
    var publishedCount: Int64 {
        Int64(littleEndian: mapping.base.load(fromByteOffset: Field.count.rawValue, as: Int64.self))
    }

    func publish(count: Int, continuing: Int64?) {
        precondition((0...capacity).contains(count), "at most capacity samples")
        if count == 0 {
            // The count first: the slots are about to be overwritten with a new batch.
            mapping.publish(0, at: Field.count.rawValue)
            mapping.base.storeBytes(
                of: (continuing ?? Self.noContinuation).littleEndian, toByteOffset: Field.continuing.rawValue, as: Int64.self)
        } else {
            mapping.base.storeBytes(
                of: (continuing ?? Self.noContinuation).littleEndian, toByteOffset: Field.continuing.rawValue, as: Int64.self)
            mapping.publish(Int64(count).littleEndian, at: Field.count.rawValue)
        }
    }

    /// What a file left by a crash holds: whole samples a replay may take in, or nil when it
    /// holds none (empty, not continuing) or is not a staged-samples file as this version writes
    /// it (every field is checked: the file is input like any other).
    struct Left: Equatable {
        var stream: Int64
        var boot: String
        var anchor: Int64
        var continuing: Int64
        var samples: ChunkSamples
    }

    static func parse(_ bytes: [UInt8]) -> Left? {
        var reader = ByteReader(bytes)
        do throws(ByteTruncation) {
            guard try reader.uint32() == magic, try reader.uint32() == version else { return nil }
            let stream = try reader.integer(Int64.self), anchor = try reader.integer(Int64.self)
            let capacity = try reader.integer(Int64.self), columns = try reader.integer(Int64.self)
            let continuing = try reader.integer(Int64.self), count = try reader.integer(Int64.self)
            _ = try reader.take(Field.boot.rawValue - reader.offset)  // reserved
            let id = try reader.take(64).prefix { $0 != 0 }
            guard (1...Int64(maxCapacity)).contains(capacity), (1...Int64(maxColumns)).contains(columns),
                (1...capacity).contains(count), continuing != noContinuation,
                size(capacity: Int(capacity), columns: Int(columns)) == bytes.count,
                !id.isEmpty, let boot = String(validating: id, as: UTF8.self)
            else { return nil }
            let stride = Int(columns) + 2
            let rows = try reader.array(Int(count) * stride, of: Int64.self)
            func column(_ index: Int) -> [Int64] {
                Swift.stride(from: index, to: rows.count, by: stride).map { Int64(littleEndian: rows[$0]) }
            }
            return Left(
                stream: stream, boot: boot, anchor: anchor, continuing: continuing,
                samples: ChunkSamples(
                    times: column(0), receiveTimes: column(1), columns: (0..<Int(columns)).map { column(2 + $0) }))
        } catch {
            return nil
        }
    }
}

extension StoreWriter {
    /// Takes in the samples sources had staged when the process ended (after the hand-over
    /// journal's replay, before crash recovery seals the pieces and records what the crash took),
    /// then removes every staged-samples file. A file's samples are taken only when they continue
    /// what the database holds — the batch handed over before them is stored (its last sample at
    /// or before the stream's newest) — and only those after the stream's newest sample; else the
    /// crash's deletion record covers them, as it covers everything after the last sample kept.
    func replayStaged() throws {
        let directory = configuration.directory
        let names = (try? SystemCalls.directoryEntries(directory))?.filter { $0.hasPrefix("store.staged.") } ?? []
        guard !names.isEmpty else { return }
        let db = try database()
        let newest = try db.prepare("SELECT max(max_time) FROM chunks WHERE stream = ?")
        var inserted = false
        for name in names {
            let path = directory + "/" + name
            defer { try? SystemCalls.unlink(path) }
            guard let bytes = Self.readSmallRegularFile(path), let left = StagedSamplesFile.parse(bytes),
                let descriptor = registry.descriptor(StreamID(rawValue: left.stream)),
                descriptor.schema.columns.count == left.samples.columns.count
            else { continue }
            newest.reset()
            try newest.bind(1, left.stream)
            guard try newest.step(), !newest.isNull(0) else { continue }
            let stored = newest.int64(0)
            guard left.continuing.addingSaturating(left.anchor) <= stored else { continue }
            let stream = StreamID(rawValue: left.stream)
            var chunk = OpenChunk(
                stream: stream, roles: descriptor.columnRoles, instants: descriptor.instantColumns,
                bootRow: try bootRow(BootID(rawValue: left.boot), anchor: left.anchor))
            chunk.append(left.samples, shift: left.anchor)
            let samples = chunk.samples
            guard let first = samples.times.firstIndex(where: { $0 > stored }) else { continue }
            let kept = first..<samples.count
            try insertPiece(
                stream: stream, bootRow: chunk.bootRow, count: kept.count, bounds: samples.timeBounds(kept),
                receives: samples.receiveBounds(kept),
                bytes: encoder.encode(samples, range: kept, roles: descriptor.columnRoles, effort: .fast))
            inserted = true
        }
        if inserted { try commit() }
    }

    /// A regular file's bytes, at most 64 MiB; nil for anything else.
    static func readSmallRegularFile(_ path: String) -> [UInt8]? {
        guard let fd = try? SystemCalls.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) else { return nil }
        defer { _ = SystemCalls.close(fd) }
        guard let status = try? SystemCalls.fstat(fd, path), status.st_mode & S_IFMT == S_IFREG,
            let bytes = try? SystemFiles.read(fileDescriptor: fd, path: path, limit: 64 << 20 + 1), bytes.count <= 64 << 20
        else { return nil }
        return bytes
    }
}
