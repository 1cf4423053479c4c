import SensorKitModel
import SensorStore

extension StoreBackend {
    /// The `health` figures from the store's catalog (docs/protocol.md §3.5). Never waits for
    /// the writer: the caller asked `whenReadable(through:)` first.
    public func health(now: Int64, from: Int64, to: Int64, sensors: Set<SRSensor>?) throws -> WireHealth {
        let day: Int64 = 86_400_000_000_000, minute: Int64 = 60_000_000_000
        let dayStart = now.subtractingSaturating(day)
        func visible(_ sensor: SRSensor) -> Bool { sensors?.contains(sensor) ?? true }
        func key(_ sensor: SRSensor, _ device: String) -> String { sensor.rawValue + "\u{0}" + device }
        // One pixel of a day-wide picture is about a minute; finer spans would only fill the reply.
        let mergeGap = max(1_000_000_000, to.subtractingSaturating(from) / 4_000)
        let detail = try store.activity(
            from: from, to: to, mergeGap: mergeGap, maxSpans: WireHealth.maxSpansPerStream, foldingFirst: false
        )
        .filter { visible($0.sensor) }
        // The minute before the day: each query reads what is committed when it runs, and the
        // writer commits in between, so read in this order the day never counts fewer samples
        // than the minute it contains (a test saw 101 for the day beside 252 for the minute).
        let lastMinute = Dictionary(
            try store.activity(from: now.subtractingSaturating(minute), to: now, maxSpans: 1, foldingFirst: false)
                .map { (key($0.sensor, $0.device), $0.samples) }, uniquingKeysWith: { first, _ in first })
        let lastDay = Dictionary(
            try store.activity(from: dayStart, to: now, maxSpans: 1, foldingFirst: false).map { (key($0.sensor, $0.device), $0) },
            uniquingKeysWith: { first, _ in first })
        let summaries = Dictionary(grouping: try store.deletionSummary(from: dayStart, to: now)) { key($0.sensor, $0.device) }
        let records = Dictionary(
            grouping: try store.deletionRecords(from: from, to: to, limitPerStream: WireHealth.maxRecordsPerStream + 1)
        ) {
            key($0.sensor, $0.device)
        }
        let detailSummaries = Dictionary(grouping: try store.deletionSummary(from: from, to: to)) { key($0.sensor, $0.device) }
        var streams: [WireStreamHealth] = detail.map { activity in
            let k = key(activity.sensor, activity.device)
            var kept = records[k] ?? []
            let total = detailSummaries[k]?.reduce(0) { $0 + $1.count } ?? kept.count
            if kept.count > WireHealth.maxRecordsPerStream { kept.removeLast(kept.count - WireHealth.maxRecordsPerStream) }
            var health = WireStreamHealth(
                sensor: activity.sensor.rawValue, device: activity.device, expectedRate: nil, recording: false,
                lastSample: activity.newestSample ?? lastDay[k]?.newestSample,
                lastMinute: lastMinute[k] ?? 0, lastDay: lastDay[k]?.samples ?? 0,
                gaps: (summaries[k] ?? []).map {
                    WireGapSummary(reason: $0.reason.rawValue, count: $0.count, seconds: Double($0.nanoseconds) / 1e9)
                },
                spans: activity.spans.map { [$0.lowerBound, $0.upperBound] },
                records: kept.map { WireGap(start: $0.start, end: $0.end, reason: $0.reason.rawValue) })
            if total > kept.count { health.omittedRecords = total - kept.count }
            health.created = activity.created
            return health
        }
        var omitted: Int?
        if streams.count > WireHealth.maxStreams {
            omitted = streams.count - WireHealth.maxStreams
            streams.removeLast(streams.count - WireHealth.maxStreams)
        }
        let usage = try store.diskUsage()
        var health = WireHealth(
            now: now, from: from, to: to, streams: streams,
            store: WireStoreUse(
                occupiedBytes: usage.occupiedBytes, availableBytes: usage.availableBytes,
                maxBytes: store.configuration.maxBytes, minFreeBytes: store.configuration.minFreeBytes))
        health.omittedStreams = omitted
        return health
    }
}

/// The rate a live source promises, read from its details (`samplingFrequency` of an IIO chip:
/// "100 Hz …" or "polled every 250.0 ms"; `sampleRate` of a wearable's PMD stream: "130 Hz";
/// `rate` of a generated source, Hz). Nil when they do not say.
enum ExpectedRate {
    static func of(_ details: [String: String]) -> Double? {
        if let text = details["rate"], let hertz = Double(text), hertz.isFinite, hertz > 0 { return hertz }
        guard let text = details["samplingFrequency"] ?? details["sampleRate"] else { return nil }
        let words = text.split(separator: " ")
        if text.hasPrefix("polled every "), words.count >= 4 {
            guard let value = Double(words[2]), value.isFinite, value > 0 else { return nil }
            switch words[3] {
            case "ms": return 1e3 / value
            case "s": return 1 / value
            default: return nil
            }
        }
        guard words.count >= 2, words[1] == "Hz", let hertz = Double(words[0]), hertz.isFinite, hertz > 0 else { return nil }
        return hertz
    }
}
