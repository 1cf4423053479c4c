import Foundation
import SensorKitModel
import SensorTestKit
import Testing

@Suite struct FrameDecoderTests {
    func sampleFrames() -> [Frame] {
        var frames: [Frame] = []
        for i in 0..<40 {
            var request = WireRequest(id: UInt32(i), op: .status)
            request.sensor = SRSensor.accelerometer.rawValue
            frames.append(WireJSON.frame(request))
            let batch = SampleBatchFrame(
                requestID: UInt32(i), layout: .motion,
                sensorTimes: (0..<i).map { Int64($0) * 10_000_000 }, writeTimes: (0..<i).map { Int64($0) },
                columns: [(0..<i).map { Double($0) }, (0..<i).map { -Double($0) }, (0..<i).map { _ in -1 }])
            var bytes: [UInt8] = []
            batch.appendFrame(to: &bytes)
            frames.append(Frame(kind: .batch, payload: Array(bytes.dropFirst(Frame.headerSize))))
        }
        return frames
    }

    func decodeAll(_ stream: [UInt8], pieces: [Int]) throws -> [Frame] {
        var decoder = FrameDecoder(limit: WireLimits.maxServerFrame)
        var out: [Frame] = []
        var offset = 0
        var pieceIndex = 0
        while offset < stream.count {
            let size = min(pieces[pieceIndex % pieces.count], stream.count - offset)
            decoder.feed(stream[offset..<(offset + size)])
            offset += size
            pieceIndex += 1
            while let frame = try decoder.next() { out.append(frame) }
        }
        #expect(decoder.bufferedCount == 0)
        return out
    }

    @Test func dripFeedBigBufferOneByteAndRandomChunks() throws {
        let frames = sampleFrames()
        let stream = frames.flatMap { $0.encoded() }
        #expect(try decodeAll(stream, pieces: [stream.count]) == frames)
        #expect(try decodeAll(stream, pieces: [1]) == frames)
        var generator = SeededGenerator(seed: 7)
        let random = (0..<500).map { _ in Int.random(in: 1...300, using: &generator) }
        #expect(try decodeAll(stream, pieces: random) == frames)
    }

    /// Decodes `stream` by letting `fill` read into the decoder, `pieces` bytes per read at most,
    /// taking frames with the borrowing `nextFrame`.
    func decodeInPlace(_ stream: [UInt8], pieces: [Int]) throws -> [Frame] {
        var decoder = FrameDecoder(limit: WireLimits.maxServerFrame)
        var out: [Frame] = []
        var offset = 0
        var pieceIndex = 0
        while offset < stream.count {
            let piece = pieces[pieceIndex % pieces.count]
            pieceIndex += 1
            let n = decoder.fill { room in
                let n = min(room.count, piece, stream.count - offset)
                room.copyBytes(from: stream[offset..<(offset + n)])
                return n
            }
            #expect(n > 0)
            offset += n
            while let frame = try decoder.nextFrame({ kind, payload in Frame(kind: kind, payload: Array(payload)) }) {
                out.append(frame)
            }
        }
        #expect(decoder.bufferedCount == 0)
        return out
    }

    @Test func fillReadsInPlaceWhateverTheReadSizes() throws {
        let frames = sampleFrames()
        let stream = frames.flatMap { $0.encoded() }
        #expect(try decodeInPlace(stream, pieces: [stream.count]) == frames)
        #expect(try decodeInPlace(stream, pieces: [1]) == frames)
        var generator = SeededGenerator(seed: 11)
        let random = (0..<500).map { _ in Int.random(in: 1...70_000, using: &generator) }
        #expect(try decodeInPlace(stream, pieces: random) == frames)
        // Interleaved with `feed`, as a reader may mix both.
        var decoder = FrameDecoder(limit: WireLimits.maxServerFrame)
        var out: [Frame] = []
        var offset = 0
        while offset < stream.count {
            if offset % 2 == 0 {
                let n = min(37, stream.count - offset)
                decoder.feed(stream[offset..<(offset + n)])
                offset += n
            } else {
                offset += decoder.fill { room in
                    let n = min(room.count, 1000, stream.count - offset)
                    room.copyBytes(from: stream[offset..<(offset + n)])
                    return n
                }
            }
            while let frame = try decoder.next() { out.append(frame) }
        }
        #expect(out == frames)
    }

    @Test func fillOffersTheRestOfABigFrameInOneRoom() throws {
        let count = 20_000  // 800 KB: far more than a minimum read
        let batch = SampleBatchFrame(
            requestID: 1, layout: .motion, sensorTimes: (0..<count).map(Int64.init),
            writeTimes: (0..<count).map(Int64.init),
            columns: (0..<3).map { axis in (0..<count).map { Double($0 * axis) } })
        var stream: [UInt8] = []
        batch.appendFrame(to: &stream)
        var decoder = FrameDecoder(limit: WireLimits.maxServerFrame)
        decoder.feed(stream[0..<9])
        var offered = 0
        let n = decoder.fill { room in
            offered = room.count
            room.copyBytes(from: stream[9...])
            return stream.count - 9
        }
        #expect(offered >= stream.count - 9 && n == stream.count - 9)
        let decoded = try decoder.nextFrame { kind, payload in
            #expect(kind == .batch)
            return try? SampleBatchFrame.decode(payload)
        }
        #expect(decoded == .some(batch))
        #expect(decoder.bufferedCount == 0)
    }

    @Test func fillPassesEndOfStreamAndErrorsThrough() throws {
        var decoder = FrameDecoder(limit: 1024)
        decoder.feed([3, 0, 0])
        #expect(decoder.fill { _ in 0 } == 0)
        #expect(decoder.fill { _ in -1 } == -1)
        #expect(decoder.bufferedCount == 3)
        #expect(try decoder.next() == nil)
    }

    @Test func oversizedEmptyAndUnknownFramesAreErrors() {
        var decoder = FrameDecoder(limit: 1024)
        decoder.feed([0x01, 0x10, 0x00, 0x00, 1])  // 4097 bytes announced
        #expect(throws: FrameError.tooLarge(length: 4097, limit: 1024)) { try decoder.next() }
        var empty = FrameDecoder(limit: 1024)
        empty.feed([0, 0, 0, 0])
        #expect(throws: FrameError.emptyFrame) { try empty.next() }
        var unknown = FrameDecoder(limit: 1024)
        unknown.feed([1, 0, 0, 0, 9])
        #expect(throws: FrameError.unknownKind(9)) { try unknown.next() }
    }

    @Test func truncatedBatchesAreRejectedAtEveryLength() throws {
        let batch = SampleBatchFrame(
            requestID: 3, layout: .heartRate, sensorTimes: [1, 2], writeTimes: [3, 4],
            columns: [[60, 61], [2, 3], [1, 2]], ragged: [0.8, 0.81, 0.79])
        var bytes: [UInt8] = []
        batch.appendFrame(to: &bytes)
        let payload = Array(bytes.dropFirst(Frame.headerSize))
        #expect(try SampleBatchFrame.decode(payload) == batch)
        for length in 0..<payload.count {
            #expect(throws: SampleBatchFrame.DecodeError.self) { try SampleBatchFrame.decode(Array(payload.prefix(length))) }
        }
        #expect(throws: SampleBatchFrame.DecodeError.trailingBytes(1)) { try SampleBatchFrame.decode(payload + [0]) }
        var wrongLayout = payload
        wrongLayout[4] = 200
        #expect(throws: SampleBatchFrame.DecodeError.unknownLayout(200)) { try SampleBatchFrame.decode(wrongLayout) }
    }

    @Test func hugeCountsDoNotAllocate() {
        // A hostile count of 2^32−1 samples must fail on truncation, not try to allocate terabytes.
        let payload: [UInt8] = [1, 0, 0, 0, 1, 0, 3, 0, 0xFF, 0xFF, 0xFF, 0xFF]
        #expect(throws: SampleBatchFrame.DecodeError.self) { try SampleBatchFrame.decode(payload) }
    }

    @Test func requestsDecodeAndUnknownOperationsSurvive() throws {
        let json = #"{"id":5,"op":"teleport","sensor":"com.apple.SensorKit.als"}"#
        let request = try WireJSON.decode(WireRequest.self, from: Array(json.utf8))
        #expect(request.id == 5 && request.operation == nil && request.op == "teleport")
        var fetch = WireRequest(id: 9, op: .fetch)
        fetch.from = -5
        fetch.to = Int64.max
        let frame = WireJSON.frame(fetch)
        #expect(try WireJSON.decode(WireRequest.self, from: frame.payload) == fetch)
    }

    @Test func malformedRequestsSayWhichFieldIsWrong() {
        func message(_ json: String) -> String {
            do {
                _ = try WireRequest.decode(Array(json.utf8))
                return "decoded"
            } catch { return error.description }
        }
        #expect(
            message(#"{"id":-1,"op":"status"}"#).hasPrefix(
                "field 'id' is malformed: it must be an integer from 0 to 4294967295, not -1"))
        #expect(message(#"{"id":4294967296,"op":"status"}"#).contains("field 'id' is malformed"))
        #expect(message(#"{"id":1,"op":"fetch","from":1.5}"#).contains("field 'from' is malformed"))
        #expect(message(#"{"id":1,"op":"hello","v":"1"}"#) == "field 'v' is malformed: it must be an integer, not a string")
        #expect(message(#"{"id":1,"op":7}"#).contains("field 'op' is malformed"))
        #expect(message(#"{"id":1}"#) == "field 'op' is missing")
        #expect(message("[1]") == "the message is not a JSON object")
        #expect(message("{") == "the message is not valid JSON")
        #expect(message(#"{"id":4294967295,"op":"status","from":-9223372036854775808}"#) == "decoded")
    }

    @Test func noReplyFrameExceedsTheLimit() {
        var small = WireReply(id: 3, ok: true)
        small.notice = "fine"
        #expect(WireJSON.boundedFrame(small) == WireJSON.frame(small))
        var huge = WireReply(id: 4, ok: true)
        huge.notice = String(repeating: "x", count: WireLimits.maxServerFrame)
        let bounded = WireJSON.boundedFrame(huge)
        #expect(bounded.payload.count + 1 <= WireLimits.maxServerFrame)
        let reply = try? WireJSON.decode(WireReply.self, from: bounded.payload)
        #expect(reply?.id == 4 && reply?.error?.code == .replyTooLarge && reply?.ok == nil)
    }

    @Test func errorTableIsStable() {
        #expect(
            WireErrorCode.allCases.map(\.rawValue) == [0, 1, 2, 3, 4, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111])
        for code in SRError.Code.allCases {
            #expect(WireErrorCode(code).srErrorCode == code)
            #expect(WireError(SRError(code)).domain == "SRErrorDomain")
        }
        #expect(WireError(.malformedRequest, "x").domain == "sensorkitd")
    }
}

@Suite struct BatchFrameWriterTests {
    /// A batch of `count` samples of `layout` with distinct values everywhere (ragged values for
    /// heart rate).
    func batch(_ layout: BatchLayout, count: Int, seed: UInt64) -> SampleBatchFrame {
        var generator = SeededGenerator(seed: seed)
        let times = (0..<count).map { _ in Int64.random(in: Int64.min...Int64.max, using: &generator) }
        let written = (0..<count).map { _ in Int64.random(in: -1_000_000...1_000_000, using: &generator) }
        let columns = layout.columns.map { _ in (0..<count).map { _ in Double.random(in: -1e9...1e9, using: &generator) } }
        let ragged = layout == .heartRate ? (0..<(count * 2)).map { Double($0) / 1024 } : []
        return SampleBatchFrame(
            requestID: UInt32(seed), layout: layout, sensorTimes: times, writeTimes: written,
            columns: columns, ragged: ragged)
    }

    /// The frame built in place from `batch`'s arrays: times copied at once, write times and
    /// ragged values one by one, columns either way.
    func fill(_ sections: BatchFrameSections, from batch: SampleBatchFrame) {
        sections.sensorTimes.copy(from: batch.sensorTimes)
        for (i, time) in batch.writeTimes.enumerated() { sections.writeTimes[i] = time }
        for (index, column) in batch.columns.enumerated() {
            if index % 2 == 0 {
                sections.column(index).copy(from: column[...])
            } else {
                let out = sections.column(index)
                for i in 0..<out.count { out[i] = column[i] }
            }
        }
        for (i, value) in batch.ragged.enumerated() { sections.ragged[i] = value }
    }

    func appended(_ batch: SampleBatchFrame) -> [UInt8] {
        var bytes: [UInt8] = []
        batch.appendFrame(to: &bytes)
        return bytes
    }

    @Test(arguments: BatchLayout.allCases)
    func writerBuildsTheBytesAppendFrameBuilds(_ layout: BatchLayout) throws {
        for (seed, count) in [0, 1, 7, 300].enumerated() {
            let batch = batch(layout, count: count, seed: UInt64(seed + 1))
            let bytes = BatchFrameWriter.frame(
                requestID: batch.requestID, layout: layout, count: count,
                raggedCount: batch.ragged.count
            ) { fill($0, from: batch) }
            #expect(bytes == appended(batch))
            #expect(
                bytes.count
                    == BatchFrameWriter.frameSize(
                        columns: layout.columns.count, count: count,
                        raggedCount: batch.ragged.count))
            #expect(try SampleBatchFrame.decode(Array(bytes.dropFirst(Frame.headerSize))) == batch)
        }
    }

    @Test func writingIntoUsedStorageReusesItAndSendsOnlyTheFrame() throws {
        let big = batch(.motion, count: 500, seed: 3), small = batch(.motion, count: 3, seed: 4)
        var storage: [UInt8] = []
        let bigSize = BatchFrameWriter.write(into: &storage, requestID: big.requestID, layout: .motion, count: 500) {
            fill($0, from: big)
        }
        #expect(Array(storage[0..<bigSize]) == appended(big))
        let address = storage.withUnsafeBytes { $0.baseAddress }
        let smallSize = BatchFrameWriter.write(into: &storage, requestID: small.requestID, layout: .motion, count: 3) {
            fill($0, from: small)
        }
        #expect(Array(storage[0..<smallSize]) == appended(small))
        #expect(storage.count == bigSize, "the storage keeps its size")
        #expect(storage.withUnsafeBytes { $0.baseAddress } == address, "and its memory: no reallocation")
        // A frame that does not fit grows it.
        let bigger = batch(.motion, count: 900, seed: 5)
        let biggerSize = BatchFrameWriter.write(into: &storage, requestID: bigger.requestID, layout: .motion, count: 900) {
            fill($0, from: bigger)
        }
        #expect(Array(storage[0..<biggerSize]) == appended(bigger))
    }

    @Test func maxSamplesFillsButNeverExceedsTheFrameLimit() {
        for columns in 1...8 {
            let most = BatchFrameWriter.maxSamples(columns: columns)
            #expect(BatchFrameWriter.frameSize(columns: columns, count: most) - 4 <= WireLimits.maxServerFrame)
            #expect(BatchFrameWriter.frameSize(columns: columns, count: most + 1) - 4 > WireLimits.maxServerFrame)
        }
        let widest = BatchLayout.allCases.map { $0.columns.count }.max()!
        #expect(WireLimits.samplesPerBatch <= BatchFrameWriter.maxSamples(columns: widest))
    }

    @Test func writingPastASectionCrashesInsteadOfCorrupting() async {
        await #expect(processExitsWith: .failure) {
            _ = BatchFrameWriter.frame(requestID: 1, layout: .motion, count: 2) { sections in
                sections.column(0)[2] = 1
            }
        }
        await #expect(processExitsWith: .failure) {
            _ = BatchFrameWriter.frame(requestID: 1, layout: .motion, count: 2) { sections in
                sections.column(3).fill(0)
            }
        }
    }
}
