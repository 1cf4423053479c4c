/// One day of recording as a picture (`sensorkitctl report`), or the seven days of the window
/// (`report --week`): a row per stream, recorded time filled, each gap coloured by its deletion
/// reason, time before the stream existed or any app wanted it in a colour of its own, and time
/// without data and without a record (the gap nothing explains) in another. A pure function of
/// its data: `svg()` returns the document's text. Times are SR ns; the caller supplies the axis
/// (local hours or days) as ticks.
public struct DayChart: Sendable {
    public struct Row: Sendable {
        /// As `sensorkitctl sensors` names the sensor, with the device when it is not this machine.
        public var name: String
        public var recorded: [ClosedRange<Int64>]
        public var gaps: [(range: ClosedRange<Int64>, reason: SRDeletionReason)]
        /// Before this instant the stream did not exist yet or no app had wanted the sensor: there
        /// was nothing to record, so nothing was lost. Nil when the daemon did not say (an older
        /// daemon): all time without data or record is then unexplained.
        public var notBefore: Int64?
        /// From this instant on no app has wanted the sensor (its stakes released, nothing
        /// recorded yet says so): drawn as `noInterestedClients`, not as unexplained.
        public var unwantedSince: Int64?
        public init(
            name: String, recorded: [ClosedRange<Int64>], gaps: [(range: ClosedRange<Int64>, reason: SRDeletionReason)],
            notBefore: Int64? = nil, unwantedSince: Int64? = nil
        ) {
            self.name = name
            self.recorded = recorded
            self.gaps = gaps
            self.notBefore = notBefore
            self.unwantedSince = unwantedSince
        }
    }

    public var title: String
    public var subtitle: String
    /// The range drawn, `[start, end]` SR ns: a day (24 h, or 23/25 on a daylight-saving change)
    /// or a week.
    public var start: Int64
    public var end: Int64
    /// Now, when it falls in the range: later time is left blank (not yet).
    public var now: Int64?
    /// Grid lines, each with its label centred above it (an empty label draws the line only).
    public var ticks: [(at: Int64, label: String)]
    /// Labels without a line, centred on their instant (a week's day names at noon).
    public var captions: [(at: Int64, label: String)]
    /// Darker lines between larger units (a week's midnights).
    public var boundaries: [Int64]
    public var rows: [Row]

    public init(
        title: String, subtitle: String, start: Int64, end: Int64, now: Int64?,
        ticks: [(at: Int64, label: String)], captions: [(at: Int64, label: String)] = [], boundaries: [Int64] = [],
        rows: [Row]
    ) {
        self.title = title
        self.subtitle = subtitle
        self.start = start
        self.end = max(end, start.addingSaturating(1))
        self.now = now
        self.ticks = ticks
        self.captions = captions
        self.boundaries = boundaries
        self.rows = rows
    }

    // MARK: geometry (public so a test can find a row's pixels)

    /// The label column's least width; it grows to the widest name (`TextWidth`), never cuts one.
    public static let minimumLabelWidth = 230.0
    public static let plotWidth = 1_152.0  // 48 px an hour in a day, 164.6 px a day in a week
    public static let margin = 16.0
    public static let headerHeight = 78.0
    public static let rowHeight = 34.0
    public static let barHeight = 22.0
    /// A recorded interval is drawn at least this wide, however short (30 s of a day is 0.4 px):
    /// a recording that happened must be seen. Its true length is in the row's caption.
    public static let minimumRecordedWidth = 4.0
    static let nameSize = 13.0, captionSize = 10.0, legendSize = 12.0, titleSize = 20.0, subtitleSize = 13.0
    static let legendLineHeight = 24.0

    public var labelWidth: Double {
        let widest =
            rows.map {
                max(
                    TextWidth.bound($0.name, size: Self.nameSize, bold: true),
                    TextWidth.bound(caption($0), size: Self.captionSize))
            }.max() ?? 0
        return max(Self.minimumLabelWidth, (widest + 20).rounded(.up))
    }
    public var plotLeft: Double { Self.margin + labelWidth }
    public var width: Double {
        let header = max(
            TextWidth.bound(title, size: Self.titleSize, bold: true), TextWidth.bound(subtitle, size: Self.subtitleSize))
        return max(plotLeft + Self.plotWidth + Self.margin, (header + 2 * Self.margin).rounded(.up))
    }
    var plotBottom: Double { Self.headerHeight + Double(rows.count) * Self.rowHeight }
    public var height: Double {
        let lines = Double((legend().map(\.line).max() ?? 0) + 1)
        return plotBottom + 30 + lines * Self.legendLineHeight + 10
    }

    /// The x of an instant, clamped to the plot.
    public func x(_ time: Int64) -> Double {
        let clamped = min(max(time, start), end)
        return plotLeft + Self.plotWidth * Double(clamped.subtractingSaturating(start))
            / Double(end.subtractingSaturating(start))
    }

    /// The top of row `index`'s bar.
    public func barTop(_ index: Int) -> Double {
        Self.headerHeight + Double(index) * Self.rowHeight + (Self.rowHeight - Self.barHeight) / 2
    }

    // MARK: colours

    public static let recordedColour = "#2e7d32"
    /// No data and no deletion record: the gap nothing explains.
    public static let unexplainedColour = "#fbc02d"
    /// Before the stream existed or any app wanted the sensor.
    public static let notYetColour = "#d6e4f0"
    public static let notYetText = "not yet recording: before the stream existed or an app wanted it"
    public static let unexplainedText = "no data and no record (unexplained)"
    public static func colour(_ reason: SRDeletionReason) -> String {
        switch reason {
        case .noInterestedClients: return "#b0bec5"
        case .systemInitiated: return "#e65100"
        case .lowDiskSpace: return "#c62828"
        case .ageLimit: return "#757575"
        case .userInitiated: return "#6a1b9a"
        }
    }

    public static func legendText(_ reason: SRDeletionReason) -> String {
        switch reason {
        case .noInterestedClients: return "not recording: no app wanted it"
        case .systemInitiated: return "lost: device gone, crash, overflow"
        case .lowDiskSpace: return "evicted: disk budget"
        case .ageLimit: return "expired: older than the window"
        case .userInitiated: return "deleted by a person"
        }
    }

    /// The legend's swatches, flowed into lines that fit the picture's width.
    public func legend() -> [(colour: String, text: String, x: Double, y: Double, width: Double, line: Int)] {
        let entries: [(String, String)] =
            [
                (Self.recordedColour, "recorded"), (Self.notYetColour, Self.notYetText),
                (Self.unexplainedColour, Self.unexplainedText),
            ]
            + SRDeletionReason.allCases.map { (Self.colour($0), Self.legendText($0)) }
        var placed: [(colour: String, text: String, x: Double, y: Double, width: Double, line: Int)] = []
        var x = Self.margin, line = 0
        let right = plotLeft + Self.plotWidth
        for (colour, text) in entries {
            let entryWidth = 24 + TextWidth.bound(text, size: Self.legendSize)
            if x > Self.margin && x + entryWidth > right {
                x = Self.margin
                line += 1
            }
            placed.append((colour, text, x, plotBottom + 30 + Double(line) * Self.legendLineHeight, entryWidth, line))
            x += entryWidth + 24
        }
        return placed
    }

    // MARK: the document

    public func svg() -> String {
        var out = ""
        let width = width, height = height
        out +=
            ##"<svg xmlns="http://www.w3.org/2000/svg" width="\##(n(width))" height="\##(n(height))" viewBox="0 0 \##(n(width)) \##(n(height))" font-family="DejaVu Sans, Verdana, sans-serif">"##
            + "\n"
        out += ##"<rect x="0" y="0" width="\##(n(width))" height="\##(n(height))" fill="#ffffff"/>"## + "\n"
        out += text(Self.margin, 28, title, size: Self.titleSize, weight: "bold")
        out += text(Self.margin, 50, subtitle, size: Self.subtitleSize, fill: "#424242")
        let plotTop = Self.headerHeight - 8, plotBottom = plotBottom
        for tick in ticks where tick.at >= start && tick.at <= end {
            let x = x(tick.at)
            out +=
                ##"<line x1="\##(n(x))" y1="\##(n(plotTop))" x2="\##(n(x))" y2="\##(n(plotBottom + 4))" stroke="#e0e0e0" stroke-width="1"/>"##
                + "\n"
            if !tick.label.isEmpty { out += text(x, plotTop - 4, tick.label, size: 11, fill: "#616161", anchor: "middle") }
        }
        for boundary in boundaries where boundary >= start && boundary <= end {
            let x = x(boundary)
            out +=
                ##"<line x1="\##(n(x))" y1="\##(n(plotTop))" x2="\##(n(x))" y2="\##(n(plotBottom + 4))" stroke="#9e9e9e" stroke-width="1"/>"##
                + "\n"
        }
        for caption in captions where caption.at >= start && caption.at <= end {
            out += text(x(caption.at), plotTop - 4, caption.label, size: 11, fill: "#424242", anchor: "middle")
        }
        let elapsedEnd = min(end, now ?? end)
        for (index, row) in rows.enumerated() {
            let top = barTop(index)
            if index % 2 == 1 {
                out += rect(
                    Self.margin, Self.headerHeight + Double(index) * Self.rowHeight, width - 2 * Self.margin, Self.rowHeight,
                    "#f5f5f5")
            }
            out += text(plotLeft - 10, top + 11, row.name, size: Self.nameSize, weight: "bold", anchor: "end")
            out += text(plotLeft - 10, top + 23, caption(row), size: Self.captionSize, fill: "#616161", anchor: "end")
            let began = min(max(row.notBefore ?? start, start), elapsedEnd)
            if began > start {
                out += rect(x(start), top, x(began) - x(start), Self.barHeight, Self.notYetColour, role: "not-yet")
            }
            if elapsedEnd > began {
                out += rect(x(began), top, x(elapsedEnd) - x(began), Self.barHeight, Self.unexplainedColour, role: "unexplained")
            }
            // Released stakes: the record saying so comes only when recording resumes.
            if let unwanted = row.unwantedSince, unwanted < elapsedEnd {
                let from = max(unwanted, began)
                out += rect(
                    x(from), top, x(elapsedEnd) - x(from), Self.barHeight, Self.colour(.noInterestedClients), role: "not-wanted")
            }
            // A gap narrower than a pixel still shows; recorded time is drawn over gaps it overlaps.
            for gap in row.gaps.sorted(by: { $0.range.lowerBound < $1.range.lowerBound })
            where gap.range.upperBound > start && gap.range.lowerBound < end {
                out += bar(gap.range, top: top, colour: Self.colour(gap.reason), minimum: 1.5, role: "gap")
            }
            for span in row.recorded where span.upperBound >= start && span.lowerBound <= end {
                out += bar(span, top: top, colour: Self.recordedColour, minimum: Self.minimumRecordedWidth, role: "recorded")
            }
        }
        if let now, now > start, now < end {
            let x = x(now)
            out +=
                ##"<line x1="\##(n(x))" y1="\##(n(plotTop))" x2="\##(n(x))" y2="\##(n(plotBottom + 4))" stroke="#212121" stroke-width="1.5" stroke-dasharray="4 3"/>"##
                + "\n"
            out += text(x + 4, plotBottom + 16, "now", size: 11, fill: "#212121")
        }
        for entry in legend() {
            out += rect(entry.x, entry.y, 18, 14, entry.colour, role: "legend")
            out += text(entry.x + 24, entry.y + 12, entry.text, size: Self.legendSize, fill: "#212121")
        }
        out += "</svg>\n"
        return out
    }

    /// The line under a row's name: how long it recorded, and what share of the time it could
    /// have (from when it began, or the range's start, to now or the range's end).
    public func caption(_ row: Row) -> String {
        let elapsedEnd = min(end, now ?? end)
        let began = min(max(row.notBefore ?? start, start), elapsedEnd)
        let recorded = recordedNanoseconds(row.recorded, from: start, through: elapsedEnd)
        // A sensor sampled on change (onWristState) stores instants, not stretches of time.
        if recorded == 0, !row.recorded.isEmpty {
            return row.recorded.count == 1 ? "1 moment recorded" : "\(row.recorded.count) moments recorded"
        }
        guard elapsedEnd > began else {
            return recorded > 0 ? "\(DurationText.text(seconds: Double(recorded) / 1e9)) recorded" : "not yet recording"
        }
        let share = min(
            1, Double(recordedNanoseconds(row.recorded, from: began, through: elapsedEnd)) / Double(elapsedEnd - began))
        return "\(DurationText.text(seconds: Double(recorded) / 1e9)) recorded (\(percentText(share)))"
    }

    /// Nanoseconds of `spans` inside `[from, through]` (spans assumed disjoint, as the store merges them).
    func recordedNanoseconds(_ spans: [ClosedRange<Int64>], from: Int64, through: Int64) -> Int64 {
        spans.reduce(0) { sum, span in
            let low = max(span.lowerBound, from), high = min(span.upperBound, through)
            return high > low ? sum.addingSaturating(high - low) : sum
        }
    }

    /// Recorded share of `[start, through]` (spans assumed disjoint, as the store merges them).
    public func coveredFraction(_ spans: [ClosedRange<Int64>], through: Int64) -> Double {
        guard through > start else { return 0 }
        return min(1, Double(recordedNanoseconds(spans, from: start, through: through)) / Double(through - start))
    }

    private func percentText(_ fraction: Double) -> String {
        let percent = fraction * 100
        if percent > 99.9 && percent < 100 { return "99.9 %" }
        if percent > 0 && percent < 0.1 { return "< 0.1 %" }
        return "\(Double((percent * 10).rounded()) / 10) %"
    }

    private func bar(_ range: ClosedRange<Int64>, top: Double, colour: String, minimum: Double, role: String) -> String {
        let left = x(range.lowerBound), right = x(range.upperBound)
        let width = max(right - left, minimum)
        return rect(min(left, plotLeft + Self.plotWidth - width), top, width, Self.barHeight, colour, role: role)
    }

    /// `role` names what the rectangle shows (`class`), so a reader of the SVG can find it.
    private func rect(_ x: Double, _ y: Double, _ width: Double, _ height: Double, _ fill: String, role: String? = nil)
        -> String
    {
        let kind = role.map { ##" class="\##($0)""## } ?? ""
        return ##"<rect\##(kind) x="\##(n(x))" y="\##(n(y))" width="\##(n(width))" height="\##(n(height))" fill="\##(fill)"/>"##
            + "\n"
    }

    private func text(
        _ x: Double, _ y: Double, _ content: String, size: Double, weight: String = "normal", fill: String = "#000000",
        anchor: String = "start"
    ) -> String {
        ##"<text x="\##(n(x))" y="\##(n(y))" font-size="\##(n(size))" font-weight="\##(weight)" fill="\##(fill)" text-anchor="\##(anchor)">\##(Self.escape(content))</text>"##
            + "\n"
    }

    /// Two decimals at most: enough for a pixel, short in the file.
    private func n(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        return rounded == rounded.rounded() ? String(Int64(rounded)) : String(rounded)
    }

    /// Text as XML character data: names come from devices and configuration.
    public static func escape(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default:
                // Control characters are not allowed in XML 1.0 text.
                if scalar.value < 0x20 && scalar != "\t" { out += "\u{FFFD}" } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out
    }
}
