import SensorExport
import SensorKitModel
import Testing

/// The binary COPY writer against bytes worked out by hand from PostgreSQL's format description
/// (docs/export.md, "How rows travel"), and the cut points that make commits resume exactly.
struct BinaryCopyTests {
    @Test func headerAndTrailerAreTheFormatsSignature() {
        #expect(BinaryCopy.header == [0x50, 0x47, 0x43, 0x4F, 0x50, 0x59, 0x0A, 0xFF, 0x0D, 0x0A, 0x00, 0, 0, 0, 0, 0, 0, 0, 0])
        #expect(BinaryCopy.trailer == [0xFF, 0xFF])
    }

    @Test func fieldsAreLengthPrefixedInNetworkOrder() {
        var copy = BinaryCopy()
        copy.beginRow(fields: 7)
        copy.int16(-2)
        copy.int32(258)
        copy.int64(-1)
        copy.float64(1.0)
        copy.text("ä")
        copy.null()
        copy.bool(true)
        #expect(copy.rows == 1)
        #expect(
            copy.bytes == [
                0, 7,
                0, 0, 0, 2, 0xFF, 0xFE,
                0, 0, 0, 4, 0, 0, 1, 2,
                0, 0, 0, 8, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                0, 0, 0, 8, 0x3F, 0xF0, 0, 0, 0, 0, 0, 0,
                0, 0, 0, 2, 0xC3, 0xA4,
                0xFF, 0xFF, 0xFF, 0xFF,
                0, 0, 0, 1, 1,
            ])
    }

    @Test func timestampsCountMicrosecondsFrom2000() {
        var copy = BinaryCopy()
        copy.timestamp(unixMicroseconds: 946_684_800_000_001)  // 2000-01-01 00:00:00.000001 UTC
        #expect(copy.bytes == [0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1])
        var early = BinaryCopy()
        early.timestamp(unixMicroseconds: Int64.min)  // saturates instead of trapping
        #expect(early.bytes == [0, 0, 0, 8, 0x80, 0, 0, 0, 0, 0, 0, 0])
    }

    @Test func float8ArraysCarryDimensionsAndElementType() {
        var copy = BinaryCopy()
        copy.float64Array([0.5])
        #expect(
            copy.bytes == [
                0, 0, 0, 32, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x02, 0xBD, 0, 0, 0, 1, 0, 0, 0, 1,
                0, 0, 0, 8, 0x3F, 0xE0, 0, 0, 0, 0, 0, 0,
            ])
        var empty = BinaryCopy()
        empty.float64Array([Double]())
        #expect(empty.bytes == [0, 0, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0xBD])
    }

    @Test func wallClockIsOriginPlusSRTimeFlooredToMicroseconds() {
        // origin 0 = 2001-01-01 (CF epoch) = Unix 978 307 200 s.
        #expect(StreamRows.unixMicroseconds(srNanoseconds: 1_999, origin: 0) == 978_307_200_000_001)
        #expect(StreamRows.unixMicroseconds(srNanoseconds: -1, origin: 0) == 978_307_199_999_999)
    }

    func motionRows() -> StreamRows {
        StreamRows(family: ExportFamily.of(.motion)!, device: 1, stream: "accelerometer", origin: 0)
    }

    @Test func aCutNeverSplitsSamplesOfOneSensorTime() throws {
        var rows = motionRows()
        let columns = [[1.0, 2, 3, 4], [0, 0, 0, 0], [1, 1, 1, 1]]
        try rows.append(sensorTimes: [10, 20, 30, 30], receiveTimes: [11, 21, 31, 31], columns: columns, ragged: [])
        let part = try #require(rows.committable(final: false))
        #expect(part.rows == 2)
        #expect(part.cursor == 20)
        rows.committed(rows: part.rows)
        #expect(rows.rows == 2)
        // Nothing before the held-back run: no cut until a later time arrives.
        #expect(rows.committable(final: false) == nil)
        try rows.append(sensorTimes: [30, 40], receiveTimes: [31, 41], columns: [[5, 6], [0, 0], [1, 1]], ragged: [])
        let next = try #require(rows.committable(final: false))
        #expect(next.rows == 3)
        #expect(next.cursor == 30)
        rows.committed(rows: next.rows)
        let last = try #require(rows.committable(final: true))
        #expect(last.rows == 1)
        #expect(last.cursor == 40)
    }

    @Test func theCutBytesAreWholeRows() throws {
        var rows = motionRows()
        try rows.append(sensorTimes: [1, 2], receiveTimes: [1, 2], columns: [[1, 2], [3, 4], [5, 6]], ragged: [])
        let part = try #require(rows.committable(final: false))
        var one = motionRows()
        try one.append(sensorTimes: [1], receiveTimes: [1], columns: [[1], [3], [5]], ragged: [])
        #expect(Array(part.bytes) == one.copy.bytes)
    }

    @Test func batchesOutOfShapeOrOrderAreRefused() {
        var rows = motionRows()
        #expect(throws: StreamRows.ShapeError.self) {
            try rows.append(sensorTimes: [1, 2], receiveTimes: [1], columns: [[1, 2], [3, 4], [5, 6]], ragged: [])
        }
        #expect(throws: StreamRows.ShapeError.self) {
            try rows.append(sensorTimes: [1], receiveTimes: [1], columns: [[1], [3]], ragged: [])
        }
        #expect(throws: StreamRows.ShapeError.self) {
            try rows.append(sensorTimes: [2, 1], receiveTimes: [1, 1], columns: [[1, 2], [3, 4], [5, 6]], ragged: [])
        }
    }

    @Test func raggedCountsFromThePeerAreBounded() throws {
        var rows = StreamRows(family: ExportFamily.of(.heartRate)!, device: 1, stream: "heartRate", origin: 0)
        // The second sample claims 9 RR intervals where 1 is left: NULL, not a crash.
        try rows.append(sensorTimes: [1, 2], receiveTimes: [1, 2], columns: [[60, 61], [3, 3], [1, 9]], ragged: [0.9, 1.0])
        #expect(rows.rows == 2)
        #expect(rows.copy.bytes.suffix(4) == [0xFF, 0xFF, 0xFF, 0xFF])
    }
}
