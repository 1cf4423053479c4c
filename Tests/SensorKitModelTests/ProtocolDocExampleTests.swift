import Foundation
import SensorKitModel
import Testing

/// docs/protocol.md §10, the worked byte-level fetch, checked against the real codec: each frame
/// below is decoded with `FrameDecoder`, `WireJSON` and `SampleBatchFrame.decode`, re-encoded by
/// the Swift encoders to the identical bytes, and found verbatim in the document's ```hex blocks,
/// so the document cannot drift from the code. (clients/python/test_protocol_codec.py checks the
/// same bytes against the Python client; clients/python/protocol_example.py prints the blocks.)
@Suite struct ProtocolDocExampleTests {
    static let helloRequest =
        "36000000017b22617070223a226f72672e6578616d706c652e7374756479222c226964223a312c226f70223a2268656c6c6f222c2276223a317d"
    static let helloReply =
        "a9000000017b22617070223a226f72672e6578616d706c652e7374756479222c226964223a312c226f6b223a747275652c2274696d656c696e65223a7b22616e63686f72223a3230313630303030303030303030302c22626f6f74223a2233663262386331652d356434372d346139302d623665312d306339643261376634653133222c226f726967696e223a3736323438303030303030303030303030307d2c2276657273696f6e223a317d"
    static let fetchRequest =
        "91000000017b22646576696365223a22686f7374222c2266726f6d223a3239313630303030303030303030302c226964223a322c226f70223a226665746368222c2273656e736f72223a22636f6d2e6170706c652e53656e736f724b69742e6d6f74696f6e2e616363656c65726f6d65746572222c22746f223a3239313630303032303030303030302c2277696e646f77223a387d"
    static let batch =
        "61000000020200000001000300020000008036036b3509010000cd9b6b350901000020ef88350901000020ef8835090100000000000000903f000000000000803f000000000080efbf000000000000f0bf000000000000c03f000000000000bc3f00000000"
    static let ack = "2b000000017b2262617463686573223a312c226964223a302c226f70223a2261636b222c22746172676574223a327d"
    static let fetchReply = "1d000000017b22636f756e74223a322c226964223a322c226f6b223a747275657d"

    static let blocks: KeyValuePairs<String, String> = [
        "hello-request": helloRequest, "hello-reply": helloReply, "fetch-request": fetchRequest,
        "batch": batch, "ack": ack, "fetch-reply": fetchReply,
    ]

    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        precondition(digits.count % 2 == 0, "odd hex string")
        return stride(from: 0, to: digits.count, by: 2).map {
            UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16)!
        }
    }

    /// The single frame in `hex`, decoded the way the daemon (client frames) or a client (daemon
    /// frames) decodes it.
    static func frame(_ hex: String, limit: Int) throws -> Frame {
        var decoder = FrameDecoder(limit: limit)
        decoder.feed(bytes(hex))
        let frame = try #require(try decoder.next())
        #expect(decoder.bufferedCount == 0, "exactly one frame")
        return frame
    }

    @Test func helloRequestDecodesAndReencodes() throws {
        let frame = try Self.frame(Self.helloRequest, limit: WireLimits.maxClientFrame)
        #expect(frame.kind == .message)
        let request = try WireJSON.decode(WireRequest.self, from: frame.payload)
        #expect(request.id == 1 && request.operation == .hello && request.v == WireLimits.version)
        #expect(request.app == "org.example.study")
        var expected = WireRequest(id: 1, op: .hello)
        expected.v = 1
        expected.app = "org.example.study"
        #expect(request == expected)
        #expect(WireJSON.frame(expected).encoded() == Self.bytes(Self.helloRequest))
    }

    @Test func helloReplyDecodesAndReencodes() throws {
        let frame = try Self.frame(Self.helloReply, limit: WireLimits.maxServerFrame)
        #expect(frame.kind == .message)
        let reply = try WireJSON.decode(WireReply.self, from: frame.payload)
        var expected = WireReply(id: 1, ok: true)
        expected.version = 1
        expected.app = "org.example.study"
        expected.timeline = WireTimeline(
            origin: 762_480_000_000_000_000, boot: "3f2b8c1e-5d47-4a90-b6e1-0c9d2a7f4e13",
            anchor: 201_600_000_000_000)
        #expect(reply == expected)
        #expect(WireJSON.frame(expected).encoded() == Self.bytes(Self.helloReply))
    }

    @Test func fetchRequestDecodesAndReencodes() throws {
        let frame = try Self.frame(Self.fetchRequest, limit: WireLimits.maxClientFrame)
        let request = try WireJSON.decode(WireRequest.self, from: frame.payload)
        var expected = WireRequest(id: 2, op: .fetch)
        expected.sensor = SRSensor.accelerometer.rawValue
        expected.device = SRDevice.hostIdentifier
        expected.from = 291_600_000_000_000
        expected.to = 291_600_020_000_000
        expected.window = WireLimits.defaultFetchWindow
        #expect(request == expected)
        #expect(WireJSON.frame(expected).encoded() == Self.bytes(Self.fetchRequest))
    }

    @Test func batchDecodesToTwoAccelerometerSamplesAndReencodes() throws {
        let frame = try Self.frame(Self.batch, limit: WireLimits.maxServerFrame)
        #expect(frame.kind == .batch)
        let batch = try SampleBatchFrame.decode(frame.payload)
        let expected = SampleBatchFrame(
            requestID: 2, layout: .motion,
            sensorTimes: [291_600_010_000_000, 291_600_020_000_000],
            writeTimes: [291_600_512_000_000, 291_600_512_000_000],
            columns: [[0.015625, 0.0078125], [-0.984375, -1.0], [0.125, 0.109375]])
        #expect(batch == expected)
        #expect(BatchLayout.of(.accelerometer) == batch.layout && batch.layout.columns == ["x", "y", "z"])
        #expect(batch.payloadSize == 96 && frame.payload.count == 96)
        var encoded: [UInt8] = []
        expected.appendFrame(to: &encoded)
        #expect(encoded == Self.bytes(Self.batch))
    }

    @Test func ackAndFinalReplyDecodeAndReencode() throws {
        let ackFrame = try Self.frame(Self.ack, limit: WireLimits.maxClientFrame)
        var ack = WireRequest(id: 0, op: .ack)
        ack.target = 2
        ack.batches = 1
        #expect(try WireJSON.decode(WireRequest.self, from: ackFrame.payload) == ack)
        #expect(WireJSON.frame(ack).encoded() == Self.bytes(Self.ack))

        let replyFrame = try Self.frame(Self.fetchReply, limit: WireLimits.maxServerFrame)
        var done = WireReply(id: 2, ok: true)
        done.count = 2
        #expect(try WireJSON.decode(WireReply.self, from: replyFrame.payload) == done)
        #expect(WireJSON.frame(done).encoded() == Self.bytes(Self.fetchReply))
    }

    @Test func daemonSideOfTheConversationDripFeedsIntoTheSameFrames() throws {
        // What the client reads, as one stream: hello reply, batch, final reply, one byte at a time.
        let stream = [Self.helloReply, Self.batch, Self.fetchReply].flatMap(Self.bytes)
        var decoder = FrameDecoder(limit: WireLimits.maxServerFrame)
        var kinds: [Frame.Kind] = []
        for byte in stream {
            decoder.feed([byte])
            while let frame = try decoder.next() { kinds.append(frame.kind) }
        }
        #expect(kinds == [.message, .batch, .message])
        #expect(decoder.bufferedCount == 0)
    }

    static func documentText() throws -> String {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/protocol.md")
        return try String(contentsOf: docs, encoding: .utf8)
    }

    /// The ```hex NAME blocks of docs/protocol.md, hex digits only (comments after `#` dropped).
    static func documentBlocks() throws -> [String: String] {
        let text = try documentText()
        var blocks: [String: String] = [:]
        var current: String?
        var hex = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if let name = current {
                if line.hasPrefix("```") {
                    blocks[name] = hex
                    current = nil
                } else {
                    let code = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                    hex += code.filter { !$0.isWhitespace }.lowercased()
                }
            } else if line.hasPrefix("```hex ") {
                current = String(line.dropFirst("```hex ".count)).trimmingCharacters(in: .whitespaces)
                hex = ""
            }
        }
        return blocks
    }

    /// The integers in a table cell, read as the document writes them: "65 536" is one number
    /// (digit groups joined by one space), "default 8, 1…16" is 8, 1 and 16.
    static func integers(in cell: Substring) -> [Int] {
        var numbers: [Int] = []
        var digits = ""
        var afterSpace = false
        for character in cell {
            if character.isASCII, character.isNumber {
                digits.append(character)
                afterSpace = false
            } else if character == " ", !digits.isEmpty, !afterSpace {
                afterSpace = true
            } else {
                if let number = Int(digits) { numbers.append(number) }
                digits = ""
                afterSpace = false
            }
        }
        if let number = Int(digits) { numbers.append(number) }
        return numbers
    }

    /// §6.2's table says the numbers the code uses, so the limits cannot drift from the document
    /// either.
    @Test func documentedLimitsAreTheCodes() throws {
        let rows = try Self.documentText().split(separator: "\n").filter { $0.hasPrefix("| ") }
        func value(_ limit: String) -> [Int] {
            guard let row = rows.first(where: { $0.hasPrefix("| \(limit) |") }) else {
                Issue.record("docs/protocol.md §6.2 has no row '\(limit)'")
                return []
            }
            return Self.integers(in: row.split(separator: "|")[1])
        }
        #expect(value("protocol version") == [WireLimits.version])
        #expect(value("client frame (`length` field)") == [WireLimits.maxClientFrame])
        #expect(value("daemon frame (`length` field)") == [WireLimits.maxServerFrame])
        #expect(value("samples per batch").first == WireLimits.samplesPerBatch)
        #expect(value("fetch window") == [WireLimits.defaultFetchWindow, 1, WireLimits.maxFetchWindow])
        #expect(value("running fetches per connection") == [WireLimits.maxConcurrentFetches])
        #expect(value("open requests per connection (fetches + waiting `requestAuthorization`)") == [WireLimits.maxOpenRequests])
        // The size the document quotes for the widest layout's batch (≈ N KB) is the real one.
        let largest = BatchLayout.allCases.map {
            BatchFrameWriter.frameSize(columns: $0.columns.count, count: WireLimits.samplesPerBatch(columns: $0.columns.count))
        }.max()!
        let kilobytes = Double(largest) / 1000
        #expect(value("samples per batch").dropFirst().first == Int(kilobytes.rounded()))
    }

    /// The rows of the markdown table that follows the line `header` in docs/protocol.md, split
    /// into trimmed cells with backticks removed.
    static func tableRows(after header: String) throws -> [[String]] {
        let lines = try documentText().split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0.hasPrefix(header) }) else {
            Issue.record("docs/protocol.md has no table starting '\(header)'")
            return []
        }
        return lines[(start + 2)...].prefix { $0.hasPrefix("|") }.map { line in
            line.split(separator: "|").map { $0.replacingOccurrences(of: "`", with: "").trimmingCharacters(in: .whitespaces) }
        }
    }

    /// §1.4 lists every entitlement string the daemon accepts, with its sensor: exactly the
    /// catalog's.
    @Test func documentedEntitlementStringsAreTheCatalogs() throws {
        let rows = try Self.tableRows(after: "| entitlement string | sensor |")
        let documented = rows.map { "\($0[0]) → \($0[1])" }
        let catalog = SensorCatalog.all.compactMap { d in d.entitlement.map { "\($0) → \(d.sensor.rawValue)" } }
        #expect(documented == catalog.sorted(), "docs/protocol.md §1.4 entitlement table")
    }

    @Test func documentCarriesExactlyTheseBytes() throws {
        let document = try Self.documentBlocks()
        for (name, hex) in Self.blocks {
            #expect(document[name] == hex, "docs/protocol.md block '\(name)' differs from the tested bytes")
        }
    }
}
