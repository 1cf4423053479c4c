import SensorKitModel

/// What `sensorkitctl watch` shows of one sensor: the samples/s over the last second of arrivals,
/// the last values with their units, a sparkline per column over the last samples, and the gaps
/// as they happen. A value type fed by the subscription's deliveries; `lines` draws it.
struct WatchView {
    let sensor: SRSensor
    let layout: BatchLayout
    /// How many of the latest values a sparkline spans.
    static let span = 48
    private(set) var total = 0
    private var arrivals: [(at: Double, count: Int)] = []
    private(set) var latest: [Double]
    private var recent: [[Double]]
    private(set) var gaps: [String] = []
    private(set) var state = "waiting for the daemon"

    init(sensor: SRSensor, layout: BatchLayout) {
        self.sensor = sensor
        self.layout = layout
        latest = Array(repeating: .nan, count: layout.columns.count)
        recent = Array(repeating: [], count: layout.columns.count)
    }

    mutating func subscribed(notice: String?) { state = notice ?? "live" }

    /// A batch arrived at `now` (seconds on any steady clock).
    mutating func add(_ batch: SampleBatchFrame, at now: Double) {
        guard batch.count > 0, batch.columns.count == recent.count else { return }
        total = total.addingSaturating(batch.count)
        arrivals.append((now, batch.count))
        for (index, column) in batch.columns.enumerated() {
            latest[index] = column[column.count - 1]
            recent[index].append(contentsOf: column.suffix(Self.span))
            if recent[index].count > Self.span { recent[index].removeFirst(recent[index].count - Self.span) }
        }
        state = "live"
    }

    mutating func gap(seconds: Double, reason: Int?) {
        let why = reason.flatMap(SRDeletionReason.init(rawValue:)).map { "\($0)" } ?? "unknown reason"
        gaps.append(String(format: "%.3f s lost (%@)", seconds, why))
        if gaps.count > 3 { gaps.removeFirst(gaps.count - 3) }
    }

    mutating func ended(_ why: String) { state = "ended: " + why }

    /// Samples that arrived in the second before `now`.
    mutating func rate(at now: Double) -> Int {
        arrivals.removeAll { $0.at < now - 1 }
        return arrivals.reduce(0) { $0 + $1.count }
    }

    mutating func lines(at now: Double) -> [String] {
        let name = SensorCatalog.descriptor(for: sensor)?.name ?? sensor.rawValue
        var lines = ["\(name): \(rate(at: now)) samples/s, \(total) in all — \(state)"]
        for (index, column) in layout.columns.enumerated() {
            let unit = LayoutUnits.unit(of: column, layout: layout, sensor: sensor)
            let value = latest[index].isFinite ? String(format: "%.4f", latest[index]) : "—"
            let label = "  \(column)".padding(toLength: 16, withPad: " ", startingAt: 0)
            let shown = (value + (unit.isEmpty ? "" : " " + unit)).padding(toLength: 18, withPad: " ", startingAt: 0)
            lines.append(label + shown + Self.sparkline(recent[index]))
        }
        lines += gaps.map { "  gap: " + $0 }
        return lines
    }

    /// Eight block heights from the window's least to its greatest value (flat when they are equal).
    static func sparkline(_ values: [Double]) -> String {
        let bars = Array("▁▂▃▄▅▆▇█")
        let finite = values.filter(\.isFinite)
        guard let low = finite.min(), let high = finite.max() else { return "" }
        return String(
            values.map { value -> Character in
                guard value.isFinite else { return " " }
                guard high > low else { return bars[0] }
                return bars[min(7, Int((value - low) / (high - low) * 7.999))]
            })
    }
}
