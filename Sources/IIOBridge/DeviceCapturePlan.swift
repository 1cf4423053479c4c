/// How one device's buffer is run, decided once from its description (pure):
///
/// - **Channels**: every channel of every *buffered* function of the chip, whichever of them is
///   being recorded. A BMI160's accelerometer and gyroscope share one buffer; enabling both
///   whenever either records keeps the scan layout fixed for the whole session, so a second
///   stream starting or stopping never re-enables the buffer under the first (which would drop the
///   kfifo's contents and interrupt it). The cost is a few bytes per scan for a stream nobody reads.
/// - **Rates**: a governing `*sampling_frequency` below 10 Hz is raised to the lowest accepted
///   rate ≥ 10 Hz (drivers that default to 0 Hz never produce data; docs/iio.md §12.3).
/// - **Trigger**: kept if one is set; else, for devices with a `trigger/` directory, the chip's own
///   (`<name>-dev<N>` for HID sensor hubs, `<name>-trigger` for data-ready interrupts, as
///   iio-sensor-proxy's `get_trigger_name` searches); none for hardware-FIFO drivers.
/// - **Buffer**: watermark ≈ 100 ms of scans (1…64), so a 400 Hz IMU wakes the reader ten times a
///   second; length ≥ 2 s of scans and ≥ 1024.
public struct DeviceCapturePlan: Hashable, Sendable {
    public let plan: BufferedCapture.Plan
    public let layout: ScanLayout
    /// The functions captured through this buffer.
    public let functions: [IIOSensorFunction]
    /// The rate each buffered function will run at.
    public let rates: [IIOSensorFunction.Kind: FunctionRate]
    /// Problems worth one log line each (a 0 Hz rate nothing can raise).
    public let notes: [String]

    /// Throws when the channels cannot form a layout (duplicate `_index`); nil functions → no plan.
    public init?(
        description: IIODeviceDescription, functions all: [IIOSensorFunction], triggers: [String],
        configuredRates: [IIOSensorFunction.Kind: Double] = [:]
    ) throws(ScanLayoutError) {
        let functions = all.filter { $0.capture == .buffered }
        guard !functions.isEmpty else { return nil }
        var channels: [IIOChannelID] = []
        for function in functions {
            for channel in function.orderedChannels where !channels.contains(channel) { channels.append(channel) }
        }
        var settings: [BufferedCapture.SamplingFrequencySetting] = []
        var rates: [IIOSensorFunction.Kind: FunctionRate] = [:]
        var notes: [String] = []
        for function in functions {
            let rate = FunctionRate(function: function, description: description, configured: configuredRates[function.kind])
            rates[function.kind] = rate
            if let raised = rate.raisedFrom, let attribute = rate.attribute, let hertz = rate.hertz,
                !settings.contains(where: { $0.attribute == attribute })
            {
                settings.append(.init(attribute: attribute, hertz: hertz))
                let why = rate.isConfigured ? "setting it to the configured" : "raising it to"
                let listed = description.samplingRates[attribute]?.choices == nil ? " (the device lists no choices)" : ""
                notes.append(
                    "\(description.deviceName): \(attribute) is \(BufferedCapture.format(raised)) Hz; \(why) \(BufferedCapture.format(hertz)) Hz\(listed)"
                        + (rate.isConfigured ? "" : " so the buffer fills"))
            }
            if rate.hertz == nil, let attribute = rate.attribute, !notes.contains(where: { $0.contains(attribute + " is 0 Hz") })
            {
                notes.append(
                    "\(description.deviceName): \(attribute) is 0 Hz and offers nothing faster; the buffer may stay empty and FIFO overflows cannot be detected"
                )
            }
        }
        var trigger: String?
        if description.acceptsTrigger, description.currentTrigger == nil {
            let number = description.deviceName.dropFirst("iio:device".count)
            trigger = ["\(description.name)-dev\(number)", "\(description.name)-trigger"].first(where: triggers.contains)
        }
        let fastest = rates.values.compactMap(\.hertz).max() ?? 10
        let watermark = Int(min(max(fastest / 10, 1), 64))  // clamped before converting: the rate is the device's number
        let length = max(1024, Int(min(fastest, 100_000) * 2))
        self.plan = BufferedCapture.Plan(
            channels: channels, timestamp: description.timestampElement != nil,
            timestampClock: .boottime, samplingFrequencies: settings, trigger: trigger,
            length: length, watermark: watermark)
        self.layout = try description.scanLayout(enabling: channels, timestamp: plan.timestamp)
        self.functions = functions
        self.rates = rates
        self.notes = notes
    }
}

/// The rate a function runs at: its governing `*sampling_frequency` (shared by type, by direction,
/// or device-wide), raised by the 10 Hz fix-up when it is buffered. Pure.
public struct FunctionRate: Hashable, Sendable {
    /// The attribute that governs it, nil when the device has none.
    public var attribute: String?
    /// Hz after any fix-up; nil when unknown or 0 Hz.
    public var hertz: Double?
    /// The rate before the fix-up (or the configured rate) changed it.
    public var raisedFrom: Double?
    /// The rate is the configuration's `[sensor NAME] rate`, not the 10 Hz fix-up.
    public var isConfigured = false

    public init(attribute: String?, hertz: Double?, raisedFrom: Double? = nil) {
        self.attribute = attribute
        self.hertz = hertz
        self.raisedFrom = raisedFrom
    }

    /// The rate of `function`; `configured` is the operator's `[sensor NAME] rate`, which wins over
    /// the fix-up (written for buffered functions, the polling interval for polled ones).
    public init(function: IIOSensorFunction, description: IIODeviceDescription, configured: Double? = nil) {
        guard let type = function.orderedChannels.first?.type, let rate = description.samplingRate(for: type) else {
            self.init(attribute: nil, hertz: configured.flatMap { $0 > 0 ? $0 : nil })
            return
        }
        if let configured, configured > 0 {
            if function.capture == .buffered, let target = rate.configured(configured) {
                self.init(attribute: rate.attribute, hertz: target, raisedFrom: rate.hertz)
            } else {
                self.init(attribute: rate.attribute, hertz: function.capture == .buffered ? rate.hertz : configured)
            }
            self.isConfigured = true
        } else if function.capture == .buffered, let raised = rate.fixUp() {
            self.init(attribute: rate.attribute, hertz: raised, raisedFrom: rate.hertz)
        } else {
            self.init(attribute: rate.attribute, hertz: rate.hertz > 0 ? rate.hertz : nil)
        }
    }

    /// Nanoseconds between samples, within 1 ns … 1 day: the rate is the device's number, and a
    /// `sampling_frequency` of 1e300 or 1e-300 must not trap the conversion or make a zero period.
    public var period: Int64? {
        hertz.map { Int64(min(max((1e9 / $0).rounded(), 1), 86_400e9)) }
    }

    /// "400 Hz", "25 Hz (raised from 0 Hz)", "unknown".
    public var summary: String {
        guard let hertz else { return attribute.map { "0 Hz (\($0))" } ?? "unknown" }
        let base = "\(BufferedCapture.format(hertz)) Hz"
        if isConfigured {
            return base + " (configured" + (raisedFrom.map { "; was \(BufferedCapture.format($0)) Hz)" } ?? ")")
        }
        return raisedFrom.map { base + " (raised from \(BufferedCapture.format($0)) Hz)" } ?? base
    }
}
