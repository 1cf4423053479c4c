import SensorKitModel

/// Everything sysfs says about one IIO device that the bridge needs to classify it, lay out its
/// scans and convert its values — read once, off the data path, by `IIOSysfsDevice.describe()`.
/// A value: comparing two descriptions tells whether a `change` uevent changed anything.
public struct IIODeviceDescription: Hashable, Sendable {
    /// The directory name, e.g. `iio:device0` (also the `/dev` node's name).
    public var deviceName: String
    /// `name`: the part number (`bmi160`, `accel_3d`, `tsl2591`).
    public var name: String
    /// `label` (5.8+): free-form, with standard values such as `accel-display`, `accel-base`.
    public var label: String?
    /// Every rate attribute (`sampling_frequency`, `in_accel_sampling_frequency`, …) with its
    /// `_available` choices, by attribute name.
    public var samplingRates: [String: SamplingRate]
    /// `current_timestamp_clock` (4.5+).
    public var timestampClock: IIOTimestampClock?
    /// Input channels of the types this bridge models, sorted by prefix.
    public var channels: [IIOChannel]
    /// The `in_timestamp` scan element, when the device buffers.
    public var timestampElement: ScanElementSpec?
    /// `buffer0` (5.11+) or the legacy `buffer`; nil when the device has no buffer.
    public var bufferDirectory: String?
    /// Where the scan elements were read from: `scan_elements` (legacy, also present for buffer0)
    /// or `buffer0`; nil when there are none.
    public var scanElementDirectory: String?
    /// `trigger/current_trigger`, nil when absent or empty.
    public var currentTrigger: String?
    /// The device has a `trigger/` directory: it can be given a trigger (HID sensor hubs and
    /// data-ready-interrupt drivers need one; hardware-FIFO drivers have none).
    public var acceptsTrigger: Bool
    /// Mount matrices found in sysfs, by attribute name (`mount_matrix`, `in_mount_matrix`,
    /// `in_accel_mount_matrix`, `in_anglvel_mount_matrix`).
    public var sysfsMountMatrices: [String: MountMatrix]
    /// Non-fatal problems: the device is usable in a degraded way (e.g. garbage in a scan element
    /// makes it polled-only). Each deserves one log line.
    public var degradations: [IIOAttributeError]

    public init(
        deviceName: String, name: String, label: String? = nil, samplingRates: [String: SamplingRate] = [:],
        timestampClock: IIOTimestampClock? = nil,
        channels: [IIOChannel] = [], timestampElement: ScanElementSpec? = nil,
        bufferDirectory: String? = nil, scanElementDirectory: String? = nil, currentTrigger: String? = nil,
        acceptsTrigger: Bool = false, sysfsMountMatrices: [String: MountMatrix] = [:], degradations: [IIOAttributeError] = []
    ) {
        self.deviceName = deviceName
        self.name = name
        self.label = label
        self.samplingRates = samplingRates
        self.timestampClock = timestampClock
        self.channels = channels
        self.timestampElement = timestampElement
        self.bufferDirectory = bufferDirectory
        self.scanElementDirectory = scanElementDirectory
        self.currentTrigger = currentTrigger
        self.acceptsTrigger = acceptsTrigger
        self.sysfsMountMatrices = sysfsMountMatrices
        self.degradations = degradations
    }

    /// The device-wide `sampling_frequency` in Hz, if the device has one.
    public var samplingFrequency: Double? { samplingRates["sampling_frequency"]?.hertz }

    /// The device-wide `sampling_frequency_available`.
    public var samplingFrequencyChoices: SamplingFrequencyChoices? { samplingRates["sampling_frequency"]?.choices }

    /// The rate that governs a channel type, by the ABI's lookup order: shared by type
    /// (`in_accel_sampling_frequency`), by direction (`in_sampling_frequency`), by all
    /// (`sampling_frequency`). This is the attribute to fix up before enabling the buffer.
    public func samplingRate(for type: String) -> SamplingRate? {
        for name in IIOChannelID.sharedAttributeNames(type: type, info: "sampling_frequency") {
            if let rate = samplingRates[name] { return rate }
        }
        return nil
    }

    /// The channel with this prefix (`in_accel_x`).
    public func channel(_ prefix: String) -> IIOChannel? { channels.first { $0.id.prefix == prefix } }

    /// Whether buffered capture is possible at all: a buffer directory and scan elements.
    public var canBuffer: Bool {
        bufferDirectory != nil && channels.contains { $0.scanElement != nil }
    }

    /// The sysfs mount matrix for a channel type, by the ABI's lookup order: shared by type
    /// (`in_accel_mount_matrix`), by direction (`in_mount_matrix`), by all (`mount_matrix`).
    /// The udev property takes precedence over all of these (`MotionConversion`).
    public func sysfsMountMatrix(for type: String) -> MountMatrix? {
        for name in IIOChannelID.sharedAttributeNames(type: type, info: "mount_matrix") {
            if let matrix = sysfsMountMatrices[name] { return matrix }
        }
        return nil
    }
}

/// One input channel: what sysfs offers to read it and how to convert its values.
public struct IIOChannel: Hashable, Sendable {
    public var id: IIOChannelID
    /// `<prefix>_raw` exists: a polled read gives raw counts.
    public var hasRaw: Bool
    /// `<prefix>_input` exists: a polled read gives a processed value (scale not applied).
    public var hasInput: Bool
    /// `_scale`, resolved through the lookup order; nil when none exists (treat as 1).
    public var scale: Double?
    /// The attribute `scale` came from, so it can be re-read when it changes (range switch).
    public var scaleAttribute: String?
    /// `_offset`, resolved the same way; added before scaling.
    public var offset: Double?
    /// The buffered element, if the channel can be captured through the buffer.
    public var scanElement: IIOScanElement?

    public init(
        id: IIOChannelID, hasRaw: Bool = false, hasInput: Bool = false, scale: Double? = nil,
        scaleAttribute: String? = nil, offset: Double? = nil, scanElement: IIOScanElement? = nil
    ) {
        self.id = id
        self.hasRaw = hasRaw
        self.hasInput = hasInput
        self.scale = scale
        self.scaleAttribute = scaleAttribute
        self.offset = offset
        self.scanElement = scanElement
    }

    /// Whether a sysfs poll can read this channel.
    public var isPollable: Bool { hasRaw || hasInput }

    /// How to turn this channel's raw counts into its ABI unit.
    public var calibration: ChannelCalibration { ChannelCalibration(scale: scale ?? 1, offset: offset ?? 0) }
}

/// `scan_elements/<prefix>_{en,index,type}`.
public struct IIOScanElement: Hashable, Sendable {
    public var index: Int
    public var type: ScanType
    /// `_en` as read; the capture enables what it needs.
    public var isEnabled: Bool

    public init(index: Int, type: ScanType, isEnabled: Bool) {
        self.index = index
        self.type = type
        self.isEnabled = isEnabled
    }
}

/// A sampling-frequency attribute as read: `<attribute>` in Hz and `<attribute>_available`.
public struct SamplingRate: Hashable, Sendable {
    public var attribute: String
    public var hertz: Double
    public var choices: SamplingFrequencyChoices?

    public init(attribute: String, hertz: Double, choices: SamplingFrequencyChoices? = nil) {
        self.attribute = attribute
        self.hertz = hertz
        self.choices = choices
    }

    /// The rate to write before enabling the buffer when this one is below `floor` — drivers
    /// that default to 0 Hz never produce data, and ~1 Hz ones block sysfs reads (docs/iio.md
    /// §12.3; iio-sensor-proxy uses a 10 Hz floor). A device that lists no choices (HID sensor
    /// hubs have no `_available`) is given the floor itself, as iio-sensor-proxy does. Nil when
    /// no change is needed.
    public func fixUp(floor: Double = 10) -> Double? {
        guard hertz < floor else { return nil }
        guard let choices else { return floor }
        guard let better = choices.lowest(atLeast: floor), better != hertz else { return nil }
        return better
    }

    /// The rate to write for a configured `wanted` rate (`[sensor NAME] rate`): the lowest
    /// accepted rate at or above it (or the fastest), or `wanted` itself when the device lists no
    /// choices. Nil when the device already runs at it.
    public func configured(_ wanted: Double) -> Double? {
        let target = choices?.lowest(atLeast: wanted) ?? wanted
        return target == hertz ? nil : target
    }
}

/// `current_timestamp_clock` values (kernel `iio_store_timestamp_clock`).
public enum IIOTimestampClock: String, Hashable, Sendable, CaseIterable {
    case realtime, monotonic, boottime, tai
    case monotonicRaw = "monotonic_raw"
    case realtimeCoarse = "realtime_coarse"
    case monotonicCoarse = "monotonic_coarse"
}
