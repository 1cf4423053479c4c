/// One day of recording as a picture (`sensorkitctl report`): a row per stream, recorded time
/// filled, each gap coloured by its deletion reason, time without data and without a record in
/// a colour of its own. A pure function of its data: `svg()` returns the document's text.
/// Times are SR ns; the caller supplies the axis (local hours) as ticks.
public struct DayChart: Sendable {
    public struct Row: Sendable {
        /// As `sensorkitctl sensors` names the sensor, with the device when it is not this machine.
        public var name: String
        public var recorded: [ClosedRange<Int64>]
        public var gaps: [(range: ClosedRange<Int64>, reason: SRDeletionReason)]
        public init(name: String, recorded: [ClosedRange<Int64>], gaps: [(range: ClosedRange<Int64>, reason: SRDeletionReason)]) {
            self.name = name
            self.recorded = recorded
            self.gaps = gaps
        }
    }

    public var title: String
    public var subtitle: String
    /// The day, `[start, end]` SR ns (24 h, or 23/25 on a daylight-saving change).
    public var start: Int64
    public var end: Int64
    /// Now, when it falls in the day: later time is left blank (not yet).
    public var now: Int64?
    public var ticks: [(at: Int64, label: String)]
    public var rows: [Row]

    public init(
        title: String, subtitle: String, start: Int64, end: Int64, now: Int64?,
        ticks: [(at: Int64, label: String)], rows: [Row]
    ) {
        self.title = title
        self.subtitle = subtitle
        self.start = start
        self.end = max(end, start.addingSaturating(1))
        self.now = now
        self.ticks = ticks
        self.rows = rows
    }

    // MARK: geometry (public so a test can find a row's pixels)

    public static let labelWidth = 230.0
    public static let plotWidth = 1_152.0  // 48 px an hour
    public static let margin = 16.0
    public static let headerHeight = 78.0
    public static let rowHeight = 34.0
    public static let barHeight = 22.0
    public static let legendHeight = 64.0

    public static var plotLeft: Double { margin + labelWidth }
    public static var width: Double { plotLeft + plotWidth + margin }
    public var height: Double { Self.headerHeight + Double(rows.count) * Self.rowHeight + 26 + Self.legendHeight }

    /// The x of an instant, clamped to the plot.
    public func x(_ time: Int64) -> Double {
        let clamped = min(max(time, start), end)
        return Self.plotLeft + Self.plotWidth * Double(clamped.subtractingSaturating(start))
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

    // MARK: the document

    public func svg() -> String {
        var out = ""
        let width = Self.width, height = height
        out +=
            ##"<svg xmlns="http://www.w3.org/2000/svg" width="\##(n(width))" height="\##(n(height))" viewBox="0 0 \##(n(width)) \##(n(height))" font-family="DejaVu Sans, Verdana, sans-serif">"##
            + "\n"
        out += ##"<rect x="0" y="0" width="\##(n(width))" height="\##(n(height))" fill="#ffffff"/>"## + "\n"
        out += text(Self.margin, 28, title, size: 20, weight: "bold")
        out += text(Self.margin, 50, subtitle, size: 13, fill: "#424242")
        let plotTop = Self.headerHeight - 8, plotBottom = Self.headerHeight + Double(rows.count) * Self.rowHeight
        // Hour grid and labels above the rows.
        for tick in ticks where tick.at >= start && tick.at <= end {
            let x = x(tick.at)
            out +=
                ##"<line x1="\##(n(x))" y1="\##(n(plotTop))" x2="\##(n(x))" y2="\##(n(plotBottom + 4))" stroke="#e0e0e0" stroke-width="1"/>"##
                + "\n"
            out += text(x, plotTop - 4, tick.label, size: 11, fill: "#616161", anchor: "middle")
        }
        let elapsedEnd = min(end, now ?? end)
        for (index, row) in rows.enumerated() {
            let top = barTop(index)
            if index % 2 == 1 {
                out += rect(
                    Self.margin, Self.headerHeight + Double(index) * Self.rowHeight, width - 2 * Self.margin, Self.rowHeight,
                    "#f5f5f5")
            }
            let covered = coveredFraction(row.recorded, through: elapsedEnd)
            out += text(Self.plotLeft - 10, top + 11, row.name, size: 13, weight: "bold", anchor: "end")
            out += text(
                Self.plotLeft - 10, top + 23, "\(percentText(covered)) recorded", size: 10, fill: "#616161", anchor: "end")
            if elapsedEnd > start {
                out += rect(x(start), top, x(elapsedEnd) - x(start), Self.barHeight, Self.unexplainedColour)
            }
            // A gap narrower than a pixel still shows; recorded time is drawn over gaps it overlaps.
            for gap in row.gaps.sorted(by: { $0.range.lowerBound < $1.range.lowerBound })
            where gap.range.upperBound > start && gap.range.lowerBound < end {
                out += bar(gap.range, top: top, colour: Self.colour(gap.reason), minimum: 1.5)
            }
            for span in row.recorded where span.upperBound >= start && span.lowerBound <= end {
                out += bar(span, top: top, colour: Self.recordedColour, minimum: 1)
            }
        }
        if let now, now > start, now < end {
            let x = x(now)
            out +=
                ##"<line x1="\##(n(x))" y1="\##(n(plotTop))" x2="\##(n(x))" y2="\##(n(plotBottom + 4))" stroke="#212121" stroke-width="1.5" stroke-dasharray="4 3"/>"##
                + "\n"
            out += text(x + 4, plotBottom + 16, "now", size: 11, fill: "#212121")
        }
        // Legend: two lines of swatches.
        let entries: [(String, String)] =
            [(Self.recordedColour, "recorded"), (Self.unexplainedColour, "no data and no record (unexplained)")]
            + [SRDeletionReason.noInterestedClients, .systemInitiated, .lowDiskSpace, .ageLimit, .userInitiated].map {
                (Self.colour($0), Self.legendText($0))
            }
        let legendTop = plotBottom + 30
        for (i, entry) in entries.enumerated() {
            let column = Double(i % 4), line = Double(i / 4)
            let x = Self.margin + column * 340, y = legendTop + line * 24
            out += rect(x, y, 18, 14, entry.0)
            out += text(x + 24, y + 12, entry.1, size: 12, fill: "#212121")
        }
        out += "</svg>\n"
        return out
    }

    /// Recorded share of `[start, through]` (spans assumed disjoint, as the store merges them).
    public func coveredFraction(_ spans: [ClosedRange<Int64>], through: Int64) -> Double {
        guard through > start else { return 0 }
        let covered = spans.reduce(0.0) { sum, span in
            let low = max(span.lowerBound, start), high = min(span.upperBound, through)
            return high > low ? sum + Double(high - low) : sum
        }
        return min(1, covered / Double(through - start))
    }

    private func percentText(_ fraction: Double) -> String {
        let percent = fraction * 100
        if percent > 99.9 && percent < 100 { return "99.9 %" }
        if percent > 0 && percent < 0.1 { return "< 0.1 %" }
        return "\(Double((percent * 10).rounded()) / 10) %"
    }

    private func bar(_ range: ClosedRange<Int64>, top: Double, colour: String, minimum: Double) -> String {
        let left = x(range.lowerBound), right = x(range.upperBound)
        let width = max(right - left, minimum)
        return rect(min(left, Self.plotLeft + Self.plotWidth - width), top, width, Self.barHeight, colour)
    }

    private func rect(_ x: Double, _ y: Double, _ width: Double, _ height: Double, _ fill: String) -> String {
        ##"<rect x="\##(n(x))" y="\##(n(y))" width="\##(n(width))" height="\##(n(height))" fill="\##(fill)"/>"## + "\n"
    }

    private func text(
        _ x: Double, _ y: Double, _ content: String, size: Int, weight: String = "normal", fill: String = "#000000",
        anchor: String = "start"
    ) -> String {
        ##"<text x="\##(n(x))" y="\##(n(y))" font-size="\##(size)" font-weight="\##(weight)" fill="\##(fill)" text-anchor="\##(anchor)">\##(Self.escape(content))</text>"##
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
