import Foundation
import Testing
import SensorKitModel
import SensorTestKit

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
        let batch = SampleBatchFrame(requestID: 3, layout: .heartRate, sensorTimes: [1, 2], writeTimes: [3, 4],
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

    @Test func errorTableIsStable() {
        #expect(WireErrorCode.allCases.map(\.rawValue) == [0, 1, 2, 3, 4, 100, 101, 102, 103, 104, 105, 106, 107, 108])
        for code in SRError.Code.allCases {
            #expect(WireErrorCode(code).srErrorCode == code)
            #expect(WireError(SRError(code)).domain == "SRErrorDomain")
        }
        #expect(WireError(.malformedRequest, "x").domain == "sensorkitd")
    }
}
