import Glibc
import SensorKitModel
import SensorSystem

/// One IIO device's sysfs directory (`/sys/bus/iio/devices/iio:deviceN`, or the syspath udev
/// reports, or a temporary directory in tests), and the reads the bridge makes from it.
///
/// Every method may block — sysfs reads of slow sensors can take seconds (docs/iio.md §12.3) — so
/// call them off the sampling queue: at discovery, on `change` uevents, and from the polling
/// queue of polled sensors. Listing uses `opendir`/`readdir` only (`SysfsDirectory`).
public struct IIOSysfsDevice: Hashable, Sendable {
    public let directory: SysfsDirectory

    public init(path: String) { directory = SysfsDirectory(path: path) }

    /// The device's directory name, e.g. `iio:device0`.
    public var deviceName: String { directory.name }

    /// The `iio:device*` entries under a devices root (default `/sys/bus/iio/devices`); triggers
    /// (`triggerN`) are not devices. An absent root (no IIO subsystem) gives an empty list.
    public static func devices(under root: String = "/sys/bus/iio/devices") throws(SystemError) -> [IIOSysfsDevice] {
        let names: [String]
        do throws(SystemError) {
            names = try SysfsDirectory(path: root).entries()
        } catch {
            if error.errno == ENOENT { return [] }
            throw error
        }
        return names.filter { $0.hasPrefix("iio:device") }.map { IIOSysfsDevice(path: root + "/" + $0) }
    }

    // MARK: Description

    /// Reads the whole description. Throws for what makes the device unusable (missing `name`,
    /// a garbage scale/offset/matrix/frequency, an unreadable directory); records what only
    /// degrades it (garbage in a scan element → no buffered capture) in `degradations`.
    public func describe() throws(IIOAttributeError) -> IIODeviceDescription {
        let entries = Set(try list(directory, as: "."))
        guard let name = try read("name", if: entries) else { throw error("name", .missing) }
        var description = IIODeviceDescription(deviceName: deviceName, name: name)
        description.label = try read("label", if: entries).flatMap { $0.isEmpty ? nil : $0 }
        for entry in entries.sorted() where entry == "sampling_frequency" || entry.hasSuffix("_sampling_frequency") {
            guard let hertz = try decimal(entry, if: entries) else { continue }
            var rate = SamplingRate(attribute: entry, hertz: hertz)
            if let text = try read(entry + "_available", if: entries) {
                do throws(SysfsNumberError) {
                    rate.choices = try SamplingFrequencyChoices(parsing: text)
                } catch {
                    throw self.error(entry + "_available", .malformed(value: text, reason: "not \(error.expected)"))
                }
            }
            description.samplingRates[entry] = rate
        }
        if let text = try read("current_timestamp_clock", if: entries) {
            if let clock = IIOTimestampClock(rawValue: text) {
                description.timestampClock = clock
            } else {
                description.degradations.append(
                    error(
                        "current_timestamp_clock",
                        .malformed(value: text, reason: "unknown clock name")))
            }
        }

        // Buffer and scan elements. buffer/ and scan_elements/ are the legacy names of buffer0
        // (docs/iio.md §12.5); 5.11+ also merges the scan elements into buffer0/.
        description.bufferDirectory = ["buffer", "buffer0"].first { entries.contains($0) }
        description.scanElementDirectory = ["scan_elements", "buffer0"].first { entries.contains($0) }
        var elements: [String: IIOScanElement] = [:]
        if let scanDirectory = description.scanElementDirectory {
            do throws(IIOAttributeError) {
                elements = try scanElements(in: scanDirectory)
            } catch {
                description.degradations.append(error)
            }
        }
        if let timestamp = elements.removeValue(forKey: "in_timestamp") {
            description.timestampElement = ScanElementSpec(
                channel: "in_timestamp", index: timestamp.index,
                type: timestamp.type)
        }

        // Channels: every `in_*_raw`/`in_*_input`, plus every scan element.
        var prefixes = Set(elements.keys)
        for entry in entries where entry.hasPrefix("in_") {
            if entry.hasSuffix("_mean_raw") || entry.hasSuffix("_peak_raw") { continue }
            if entry.hasSuffix("_raw") { prefixes.insert(String(entry.dropLast(4))) }
            if entry.hasSuffix("_input") { prefixes.insert(String(entry.dropLast(6))) }
        }
        for prefix in prefixes.sorted() {
            guard let id = IIOChannelID(prefix: prefix), id.type != "timestamp" else { continue }
            var channel = IIOChannel(
                id: id, hasRaw: entries.contains(prefix + "_raw"),
                hasInput: entries.contains(prefix + "_input"), scanElement: elements[prefix])
            if let attribute = id.attributeNames(info: "scale").first(where: entries.contains) {
                channel.scale = try decimal(attribute, if: entries)
                channel.scaleAttribute = attribute
            }
            if let attribute = id.attributeNames(info: "offset").first(where: entries.contains) {
                channel.offset = try decimal(attribute, if: entries)
            }
            description.channels.append(channel)
        }

        for entry in entries.sorted() where entry == "mount_matrix" || entry.hasSuffix("_mount_matrix") {
            guard let text = try read(entry, if: entries) else { continue }
            do throws(MountMatrixError) {
                description.sysfsMountMatrices[entry] = try MountMatrix(parsing: text)
            } catch {
                throw self.error(entry, .malformed(value: text, reason: error.reason))
            }
        }

        if entries.contains("trigger") {
            description.acceptsTrigger = true
            let trigger = try read("trigger/current_trigger")
            description.currentTrigger = (trigger?.isEmpty ?? true) ? nil : trigger
        }
        return description
    }

    /// Every `<prefix>_en` in the scan-element directory with its `_index` and `_type`. Any
    /// missing or garbage attribute throws: one bad element makes the layout unknowable.
    func scanElements(in subdirectory: String) throws(IIOAttributeError) -> [String: IIOScanElement] {
        let scanDirectory = directory.subdirectory(subdirectory)
        let entries = Set(try list(scanDirectory, as: subdirectory))
        var elements: [String: IIOScanElement] = [:]
        for entry in entries.sorted() where entry.hasSuffix("_en") && (entry.hasPrefix("in_") || entry.hasPrefix("out_")) {
            let prefix = String(entry.dropLast(3))
            let path = subdirectory + "/" + prefix
            guard let indexText = try read(path + "_index") else { throw error(path + "_index", .missing) }
            guard let index = Int(exactly: (try? SysfsNumber.integer(indexText)) ?? -1), index >= 0 else {
                throw error(path + "_index", .malformed(value: indexText, reason: "not a scan index (an integer ≥ 0)"))
            }
            guard let typeText = try read(path + "_type") else { throw error(path + "_type", .missing) }
            let type: ScanType
            do throws(ScanTypeError) {
                type = try ScanType(parsing: typeText)
            } catch {
                throw self.error(path + "_type", .malformed(value: typeText, reason: error.reason))
            }
            guard let enabledText = try read(path + "_en") else { throw error(path + "_en", .missing) }
            guard let enabled = try? SysfsNumber.integer(enabledText), enabled == 0 || enabled == 1 else {
                throw error(path + "_en", .malformed(value: enabledText, reason: "expected 0 or 1"))
            }
            elements[prefix] = IIOScanElement(index: index, type: type, isEnabled: enabled == 1)
        }
        return elements
    }

    // MARK: Polled reads

    /// `<prefix>_raw` as an integer count. May block until the sensor converts a sample.
    public func readRaw(_ channel: IIOChannelID) throws(IIOAttributeError) -> Int64 {
        let attribute = channel.prefix + "_raw"
        guard let text = try read(attribute) else { throw error(attribute, .missing) }
        do throws(SysfsNumberError) {
            return try SysfsNumber.integer(text)
        } catch {
            throw self.error(attribute, .malformed(value: text, reason: "not \(error.expected)"))
        }
    }

    /// `<prefix>_input` holding a count (`in_steps_input`) as an integer. May block.
    public func readInputCount(_ channel: IIOChannelID) throws(IIOAttributeError) -> Int64 {
        let attribute = channel.prefix + "_input"
        guard let text = try read(attribute) else { throw error(attribute, .missing) }
        do throws(SysfsNumberError) {
            return try SysfsNumber.integer(text)
        } catch {
            throw self.error(attribute, .malformed(value: text, reason: "not \(error.expected)"))
        }
    }

    /// `<prefix>_input`: a processed value in the ABI unit (lux, kPa, milli-°C, steps).
    public func readInput(_ channel: IIOChannelID) throws(IIOAttributeError) -> Double {
        let attribute = channel.prefix + "_input"
        guard let value = try decimal(attribute) else { throw error(attribute, .missing) }
        return value
    }

    /// A channel's processed value by whichever attribute it has: `_input` as is, else
    /// `(_raw + offset) × scale`. The polling path.
    public func readValue(_ channel: IIOChannel) throws(IIOAttributeError) -> Double {
        if channel.hasInput { return try readInput(channel.id) }
        return channel.calibration.value(raw: try readRaw(channel.id))
    }

    /// Re-reads a channel's scale from the attribute it was found in (the range may have been
    /// switched; docs/iio.md §12.2). Nil when the channel has no scale.
    public func rereadScale(of channel: IIOChannel) throws(IIOAttributeError) -> Double? {
        guard let attribute = channel.scaleAttribute else { return nil }
        guard let value = try decimal(attribute) else { throw error(attribute, .missing) }
        return value
    }

    // MARK: Plumbing

    private func list(_ directory: SysfsDirectory, as attribute: String) throws(IIOAttributeError) -> [String] {
        do throws(SystemError) {
            return try directory.entries()
        } catch {
            throw self.error(attribute, .unreadable(error))
        }
    }

    /// The attribute's trimmed text, nil if it does not exist.
    private func read(_ attribute: String) throws(IIOAttributeError) -> String? {
        do throws(SystemError) {
            return try directory.read(attribute)
        } catch {
            throw self.error(attribute, .unreadable(error))
        }
    }

    /// Reads only attributes the listing showed, so absent ones cost no `open`.
    private func read(_ attribute: String, if entries: Set<String>) throws(IIOAttributeError) -> String? {
        entries.contains(attribute) ? try read(attribute) : nil
    }

    private func decimal(_ attribute: String, if entries: Set<String>? = nil) throws(IIOAttributeError) -> Double? {
        let text = if let entries { try read(attribute, if: entries) } else { try read(attribute) }
        guard let text else { return nil }
        do throws(SysfsNumberError) {
            return try SysfsNumber.decimal(text)
        } catch {
            throw self.error(attribute, .malformed(value: text, reason: "not \(error.expected)"))
        }
    }

    private func error(_ attribute: String, _ problem: IIOAttributeError.Problem) -> IIOAttributeError {
        IIOAttributeError(device: deviceName, attribute: attribute, problem: problem)
    }
}
