import Glibc
import SensorSystem

/// Turning an IIO buffer on and off, in the order docs/iio.md §12.5 documents (the order
/// iio-sensor-proxy's `buffer_drv_data_new` uses, with the teardown its comment explains):
///
///     enable:   buffer/enable=0 (a previous run may have crashed with it on)
///               current_timestamp_clock=boottime (before enabling; where writable)
///               sampling_frequency (fix-up for drivers at 0 Hz or ~1 Hz)
///               scan_elements/*_en: 1 for the wanted channels and the timestamp, 0 for the rest
///               trigger/current_trigger (only for devices that need one)
///               buffer/length, buffer/watermark
///               buffer/enable=1
///     disable:  buffer/enable=0, then trigger cleared (if we set it), then every _en=0
///
/// Attribute changes fail with EBUSY while the buffer is on, hence enable last and disable first.
/// The sequences are pure (`enableWrites`, `disableWrites`) so their order is tested without a
/// kernel; `enable`/`disable` perform them through sysfs and may block: run them on a control
/// queue, never the sampling queue.
public enum BufferedCapture {
    /// What to ask of the device.
    public struct Plan: Hashable, Sendable {
        /// The channels to capture (the union over every function being recorded on this device).
        public var channels: [IIOChannelID]
        /// Capture the `in_timestamp` element when the device has one.
        public var timestamp: Bool
        /// The clock to select in `current_timestamp_clock`; nil leaves it alone.
        public var timestampClock: IIOTimestampClock?
        /// Rates to write, e.g. `in_accel_sampling_frequency` = 100 (one per attribute: a BMI160
        /// has separate accel and gyro rates); empty leaves them alone.
        public var samplingFrequencies: [SamplingFrequencySetting]
        /// A trigger name to select (HID `accel_3d-dev0`, `bmi160-trigger`); nil for devices with a
        /// hardware FIFO or a trigger already set.
        public var trigger: String?
        /// `buffer/length`, in scans.
        public var length: Int
        /// `buffer/watermark`, in scans: `poll` wakes when this many are queued.
        public var watermark: Int

        public init(
            channels: [IIOChannelID], timestamp: Bool = true, timestampClock: IIOTimestampClock? = .boottime,
            samplingFrequencies: [SamplingFrequencySetting] = [], trigger: String? = nil,
            length: Int = 1024, watermark: Int = 16
        ) {
            precondition(length > 0 && watermark > 0 && watermark <= length, "watermark must be within the buffer length")
            self.channels = channels
            self.timestamp = timestamp
            self.timestampClock = timestampClock
            self.samplingFrequencies = samplingFrequencies
            self.trigger = trigger
            self.length = length
            self.watermark = watermark
        }
    }

    /// A sampling-frequency attribute (`sampling_frequency`, `in_accel_sampling_frequency`, …)
    /// and the rate to write to it.
    public struct SamplingFrequencySetting: Hashable, Sendable {
        public var attribute: String
        public var hertz: Double
        public init(attribute: String, hertz: Double) {
            self.attribute = attribute
            self.hertz = hertz
        }
    }

    /// One sysfs write of a sequence. `required` writes abort the sequence when they fail;
    /// the others (clock selection on kernels where it is read-only) are reported and skipped.
    public struct Write: Hashable, Sendable {
        public var attribute: String
        public var value: String
        public var required: Bool
    }

    /// The enable sequence for `plan` on `device`, in order. Pure.
    public static func enableWrites(_ plan: Plan, device: IIODeviceDescription) throws(ScanLayoutError) -> [Write] {
        guard let buffer = device.bufferDirectory, let scanDirectory = device.scanElementDirectory else {
            throw .nothingEnabled
        }
        _ = try device.scanLayout(enabling: plan.channels, timestamp: plan.timestamp)  // every channel is buffered
        var writes = [Write(attribute: buffer + "/enable", value: "0", required: true)]
        if let clock = plan.timestampClock, device.timestampClock != nil {
            writes.append(Write(attribute: "current_timestamp_clock", value: clock.rawValue, required: false))
        }
        for rate in plan.samplingFrequencies {
            writes.append(Write(attribute: rate.attribute, value: format(rate.hertz), required: true))
        }
        let wanted = Set(plan.channels.map(\.prefix))
        for channel in device.channels where channel.scanElement != nil {
            writes.append(
                Write(
                    attribute: "\(scanDirectory)/\(channel.id.prefix)_en",
                    value: wanted.contains(channel.id.prefix) ? "1" : "0", required: true))
        }
        if device.timestampElement != nil {
            writes.append(Write(attribute: "\(scanDirectory)/in_timestamp_en", value: plan.timestamp ? "1" : "0", required: true))
        }
        if let trigger = plan.trigger {
            writes.append(Write(attribute: "trigger/current_trigger", value: trigger, required: true))
        }
        // Length and watermark are choices the kernel has defaults for; some drivers' buffers lack
        // one or the other, and neither is worth losing the sensor over.
        writes.append(Write(attribute: buffer + "/length", value: String(plan.length), required: false))
        writes.append(Write(attribute: buffer + "/watermark", value: String(plan.watermark), required: false))
        writes.append(Write(attribute: buffer + "/enable", value: "1", required: true))
        return writes
    }

    /// The teardown sequence, in order. Every step is attempted even if an earlier one fails
    /// (an unplugged device fails them all). Pure.
    public static func disableWrites(_ plan: Plan, device: IIODeviceDescription) -> [Write] {
        guard let buffer = device.bufferDirectory, let scanDirectory = device.scanElementDirectory else { return [] }
        var writes = [Write(attribute: buffer + "/enable", value: "0", required: false)]
        if plan.trigger != nil {
            writes.append(Write(attribute: "trigger/current_trigger", value: "", required: false))
        }
        for channel in device.channels where channel.scanElement != nil {
            writes.append(Write(attribute: "\(scanDirectory)/\(channel.id.prefix)_en", value: "0", required: false))
        }
        if device.timestampElement != nil {
            writes.append(Write(attribute: "\(scanDirectory)/in_timestamp_en", value: "0", required: false))
        }
        return writes
    }

    /// Performs the enable sequence and returns the layout of the scans that will arrive. A failed
    /// required write throws (after turning the buffer off again); failed optional writes are
    /// returned for the caller to log once. Blocks on sysfs.
    public static func enable(_ plan: Plan, on sysfs: IIOSysfsDevice, device: IIODeviceDescription)
        throws(BufferedCaptureError) -> (layout: ScanLayout, skipped: [IIOAttributeError])
    {
        let writes: [Write]
        let layout: ScanLayout
        do throws(ScanLayoutError) {
            writes = try enableWrites(plan, device: device)
            layout = try device.scanLayout(enabling: plan.channels, timestamp: plan.timestamp)
        } catch {
            throw .layout(error)
        }
        var skipped: [IIOAttributeError] = []
        for write in writes {
            do throws(SystemError) {
                try sysfs.directory.write(write.attribute, write.value)
            } catch {
                let failure = IIOAttributeError(device: sysfs.deviceName, attribute: write.attribute, problem: .unreadable(error))
                guard write.required else {
                    skipped.append(failure)
                    continue
                }
                _ = disable(plan, on: sysfs, device: device)
                throw .write(failure)
            }
        }
        return (layout, skipped)
    }

    /// Performs the teardown; returns the writes that failed. Blocks on sysfs.
    @discardableResult
    public static func disable(_ plan: Plan, on sysfs: IIOSysfsDevice, device: IIODeviceDescription) -> [IIOAttributeError] {
        var failures: [IIOAttributeError] = []
        for write in disableWrites(plan, device: device) {
            do throws(SystemError) {
                try sysfs.directory.write(write.attribute, write.value)
            } catch {
                failures.append(
                    IIOAttributeError(device: sysfs.deviceName, attribute: write.attribute, problem: .unreadable(error)))
            }
        }
        return failures
    }

    /// The log line for an optional write that failed: a missing length or watermark leaves the
    /// kernel's default, anything else is ignored as it is.
    public static func explain(_ failure: IIOAttributeError) -> String {
        if case let .unreadable(error) = failure.problem, error.errno == ENOENT,
            let what = ["/length": "length", "/watermark": "watermark"].first(where: { failure.attribute.hasSuffix($0.key) })?
                .value
        {
            return "\(failure.device): \(failure.attribute): missing; the buffer keeps the kernel's default \(what)"
        }
        return "\(failure), ignoring"
    }

    /// A C-locale decimal for sysfs: integers without a fraction, others with `description`
    /// (Swift's shortest round-trip form, never locale-dependent).
    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

/// Why buffered capture could not start.
public enum BufferedCaptureError: Error, Hashable, Sendable, CustomStringConvertible {
    case layout(ScanLayoutError)
    case write(IIOAttributeError)

    public var description: String {
        switch self {
        case let .layout(error): "cannot lay out scans: \(error)"
        case let .write(error): "\(error)"
        }
    }
}
