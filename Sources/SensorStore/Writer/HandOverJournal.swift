import Glibc
import SensorChunks
import SensorKitModel
import SensorSystem

/// The hand-over journal (docs/store.md, "The hand-over journal"): between two folds into
/// SQLite, the samples each commit interval brings are made crash-safe by appending them to this
/// file — one `pwrite` per tick — instead of by a SQLite transaction, which cost a recording
/// daemon's reading thread 150–450 µs per half second (docs/measurements/iio.md). A fold (any
/// SQLite commit while the journal holds records, and at the latest every sync interval) writes
/// the same samples as pieces and, in the same transaction, marks the journal's generation as
/// folded (`journal_folds`); so after a crash the records of later generations are the samples
/// SQLite lacks, and `start` inserts them as pieces before crash recovery runs.
///
/// A record is one stream's samples as plain columns (`payload`) behind a fixed header with its
/// own CRC-32C, little-endian:
///
///     magic u32 "SKHJ" | body length u32 | body CRC-32C u32 | reserved u32
///     body: generation u64 | stream i64 | boot row i64 | sample count i64 |
///           payload: sample count × (sensor time, receive time, each value column) as i64 columns
///
/// A torn or damaged record ends the journal where it starts: a crash tears only the last one,
/// and that loss lies inside the crash's deletion record.
///
/// Confined to the writer's thread, like the rest of the writer.
final class HandOverJournal {
    struct Record: Equatable, Sendable {
        var generation: UInt64
        var stream: Int64
        var bootRow: Int64
        var count: Int64
        var bytes: [UInt8]
    }

    static let magic: UInt32 = 0x4A48_4B53  // "SKHJ" read as little-endian bytes
    static let prefixSize = 16
    static let fixedBodySize = 32
    /// The longest body accepted back, and the most of a journal read at all: the writer keeps
    /// the journal below 16 MiB (`StoreWriter.journalFoldBytes`), so more is damage.
    static let maxBodySize = 32 << 20
    static let readLimit = 64 << 20
    /// More value columns than any stream has: a payload claiming more is damage.
    static let maxColumns = 4_096

    let path: String
    private var fd: Int32
    /// Where the next record goes: the end of the last whole record.
    private(set) var size = 0

    /// Opens (creating, owner-only) the journal at `path`. A link or anything but a regular file
    /// there is refused, not followed.
    init(path: String) throws(SystemError) {
        self.path = path
        fd = try SystemCalls.open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode: 0o600)
        do throws(SystemError) {
            let status = try SystemCalls.fstat(fd, path)
            guard status.st_mode & S_IFMT == S_IFREG else {
                throw SystemError("open(\(path)): not a regular file", errno: EINVAL)
            }
        } catch {
            SystemCalls.close(fd)
            throw error
        }
    }

    deinit { close() }

    func close() {
        guard fd >= 0 else { return }
        SystemCalls.close(fd)
        fd = -1
    }

    /// Reads the whole journal and keeps only its whole records: the file is cut after the last
    /// one, so what is appended next follows it. Returns the records, oldest first.
    func recover() throws(SystemError) -> [Record] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while bytes.count < Self.readLimit {
            let offset = bytes.count
            let n = try chunk.withUnsafeMutableBytes { buffer in
                Result { () throws(SystemError) in try SystemCalls.pread(fd, into: buffer, at: offset, path) }
            }.get()
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        let (records, end) = Self.parse(bytes)
        if end != bytes.count { try SystemCalls.ftruncate(fd, to: end, path) }
        size = end
        return records
    }

    /// Appends `bytes` (whole encoded records) with one `pwrite` where it can. A write that
    /// fails part-way is cut off again, so the file always ends after a whole record.
    func append(_ bytes: [UInt8]) throws(SystemError) {
        var written = 0
        do throws(SystemError) {
            while written < bytes.count {
                let (at, from) = (size + written, written)
                written += try bytes.withUnsafeBytes { all in
                    Result { () throws(SystemError) in
                        try SystemCalls.pwrite(fd, UnsafeRawBufferPointer(rebasing: all[from...]), at: at, path)
                    }
                }.get()
            }
        } catch {
            try? SystemCalls.ftruncate(fd, to: size, path)
            throw error
        }
        size += written
    }

    /// Empties the journal (everything in it is folded and on the disk). With `wiping`, its
    /// bytes are first overwritten with zeros and those synced, as SQLite's `secure_delete` does
    /// for the database: a participant's erasure leaves no copy in freed blocks of this file.
    func removeAll(wiping: Bool = false) throws(SystemError) {
        if wiping, size > 0 {
            let zeros = [UInt8](repeating: 0, count: min(size, 1 << 20))
            var offset = 0
            while offset < size {
                let length = min(zeros.count, size - offset)
                offset += try zeros.withUnsafeBytes { all in
                    Result { () throws(SystemError) in
                        try SystemCalls.pwrite(fd, UnsafeRawBufferPointer(rebasing: all[..<length]), at: offset, path)
                    }
                }.get()
            }
            try SystemCalls.fdatasync(fd, path)
        }
        try SystemCalls.ftruncate(fd, to: 0, path)
        size = 0
    }

    // MARK: Pure encoding

    /// The samples in `range` as a record's payload: sensor times, receive times, then each value
    /// column, every one as little-endian Int64 (float columns are bit patterns already). Plain,
    /// not `ChunkEncoder`'s piece: encoding at every hand-over cost the reading thread a fifth of
    /// its instructions per scan, and the fold encodes the samples as a piece anyway.
    static func payload(_ samples: ChunkSamples, range: Range<Int>) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(8 * range.count * (2 + samples.columns.count))
        func append(_ column: [Int64]) {
            column.withUnsafeBufferPointer { all in
                #if _endian(little)
                    // Already the file's byte order: one copy per column, not one append per value.
                    bytes.append(contentsOf: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: all[range])))
                #else
                    for value in all[range] { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
                #endif
            }
        }
        append(samples.times)
        append(samples.receiveTimes)
        for column in samples.columns { append(column) }
        return bytes
    }

    /// A payload's samples, when it holds exactly `count` samples of `columnCount` value columns.
    static func samples(_ payload: [UInt8], count: Int, columnCount: Int) -> ChunkSamples? {
        guard count > 0, (0...maxColumns).contains(columnCount),
            case let (columns, overflow) = (columnCount + 2).multipliedReportingOverflow(by: count), !overflow,
            case let (length, tooLong) = columns.multipliedReportingOverflow(by: 8), !tooLong, length == payload.count
        else { return nil }
        var reader = ByteReader(payload)
        func column() -> [Int64] { (0..<count).map { _ in (try? reader.integer(Int64.self)) ?? 0 } }
        let times = column()
        let receiveTimes = column()
        return ChunkSamples(times: times, receiveTimes: receiveTimes, columns: (0..<columnCount).map { _ in column() })
    }

    /// Appends `record`'s bytes to `buffer`: header, then body, written in place (the checksum
    /// is taken over the body where it lies and put into the header last), so the payload is
    /// copied once.
    static func encode(_ record: Record, into buffer: inout [UInt8]) {
        func append<Field: FixedWidthInteger>(_ field: Field) {
            withUnsafeBytes(of: field.littleEndian) { buffer.append(contentsOf: $0) }
        }
        let bodyCount = fixedBodySize + record.bytes.count
        buffer.reserveCapacity(buffer.count + prefixSize + bodyCount)
        append(magic)
        append(UInt32(bodyCount))
        let checksumAt = buffer.count
        append(UInt32(0))  // the checksum, below
        append(UInt32(0))  // reserved
        let body = buffer.count
        append(Int64(bitPattern: record.generation))
        append(record.stream)
        append(record.bootRow)
        append(record.count)
        buffer.append(contentsOf: record.bytes)
        buffer.withUnsafeMutableBytes { all in
            let checksum = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: all[body...]))
            all.storeBytes(of: checksum.littleEndian, toByteOffset: checksumAt, as: UInt32.self)
        }
    }

    /// The whole records at the start of `bytes` and where the last one ends. Parsing stops at
    /// the first record that is cut short, has another magic, an impossible length or a wrong
    /// checksum: every input is hostile, a journal a crash tore included.
    static func parse(_ bytes: [UInt8]) -> (records: [Record], end: Int) {
        var records: [Record] = []
        var end = 0
        var reader = ByteReader(bytes)
        while let record = try? next(&reader) {
            records.append(record)
            end = reader.offset
        }
        return (records, end)
    }

    /// The record at `reader`'s position; nil when it is not a whole, intact one.
    private static func next(_ reader: inout ByteReader<[UInt8]>) throws(ByteTruncation) -> Record? {
        guard try reader.integer(UInt32.self) == magic else { return nil }
        let length = Int(try reader.integer(UInt32.self))
        let checksum = try reader.integer(UInt32.self)
        _ = try reader.integer(UInt32.self)  // reserved
        guard length >= fixedBodySize, length <= maxBodySize else { return nil }
        let body = try reader.take(length)
        guard body.withUnsafeBytes({ CRC32C.checksum($0) }) == checksum else { return nil }
        var fields = ByteReader(body)
        let record = Record(
            generation: try fields.integer(), stream: try fields.integer(), bootRow: try fields.integer(),
            count: try fields.integer(), bytes: Array(fields.rest()))
        return record.count > 0 ? record : nil
    }
}
