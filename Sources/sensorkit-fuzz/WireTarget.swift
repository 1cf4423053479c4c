import SensorDaemon
import SensorKitModel

/// Bytes from a client socket: framing, then each message frame as a request, whose range goes
/// through the fetch policy on a young timeline (the first day, hold not yet passed) and an old
/// one. Batch and chunk frames (the daemon's, decoded by the client library) are decoded too.
enum WireTarget {
    static func run(_ bytes: [UInt8]) {
        var decoder = FrameDecoder(limit: WireLimits.maxClientFrame)
        // Cut the input in pieces whose sizes come from the input, as reads would.
        var rest = bytes[...]
        while !rest.isEmpty {
            let piece = Int(rest.first! % 97) + 1
            decoder.feed(rest.prefix(piece))
            rest = rest.dropFirst(piece)
            do {
                while let frame = try decoder.next() { take(frame) }
            } catch {
                return  // the connection ends with an error message
            }
        }
    }

    static func take(_ frame: Frame) {
        switch frame.kind {
        case .message:
            guard let request = try? WireJSON.decode(WireRequest.self, from: frame.payload) else { return }
            _ = request.operation
            _ = request.sensor.flatMap(SensorCatalog.sensor(named:))
            let day: Int64 = 86_400_000_000_000
            for now in [2 * 3_600_000_000_000, 40 * day] as [Int64] {
                _ = FetchPolicy.decide(
                    from: request.from ?? 0, to: request.to ?? 0, now: now, hold: day,
                    window: 7 * day, firstStart: request.target.map(Int64.init))
            }
        case .batch:
            _ = try? SampleBatchFrame.decode(frame.payload)
        case .chunk:
            frame.payload.withUnsafeBytes { _ = try? ChunkBatchFrame.decode($0) }
        }
    }
}
