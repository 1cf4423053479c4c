import SensorKitModel

/// One device of a remote libiio context (`ip:` served by `iiod` on a lab rig) as libiio's model
/// reports it — ids, scan formats and attribute texts, all read once over the network by
/// `IIORemoteContext` — turned into the same `IIODeviceDescription` a local sysfs directory gives,
/// so classification, capture plans and descriptors are shared with local devices. Pure.
///
/// libiio names a channel `accel_x` (sysfs `in_accel_x`) and its attributes without the prefix
/// (`raw`, `scale`, `sampling_frequency`); attributes shared by type appear under every channel of
/// the type, device attributes keep their sysfs names.
public struct IIORemoteDeviceModel: Hashable, Sendable {
    public struct Channel: Hashable, Sendable {
        /// libiio's id: `accel_x`, `anglvel_z`, `illuminance`, `timestamp`.
        public var id: String
        public var isOutput: Bool
        /// `_index` and `_type` when the channel is a scan element.
        public var scan: (index: Int, type: ScanType)?
        /// Attribute texts by libiio's short name (`scale`, `raw`, `sampling_frequency`).
        public var attributes: [String: String]

        public init(
            id: String, isOutput: Bool = false, scan: (index: Int, type: ScanType)? = nil, attributes: [String: String] = [:]
        ) {
            self.id = id
            self.isOutput = isOutput
            self.scan = scan
            self.attributes = attributes
        }

        public static func == (a: Channel, b: Channel) -> Bool {
            a.id == b.id && a.isOutput == b.isOutput && a.scan?.index == b.scan?.index && a.scan?.type == b.scan?.type
                && a.attributes == b.attributes
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(id)
            hasher.combine(scan?.index)
        }

        /// The sysfs attribute prefix: `in_accel_x`.
        public var prefix: String { (isOutput ? "out_" : "in_") + id }
    }

    /// `iio:device0`.
    public var id: String
    /// `name`, e.g. `bmi160`.
    public var name: String
    public var channels: [Channel]
    /// Device attribute texts (`sampling_frequency`, `current_timestamp_clock`, `in_mount_matrix`).
    public var attributes: [String: String]

    public init(id: String, name: String, channels: [Channel], attributes: [String: String] = [:]) {
        self.id = id
        self.name = name
        self.channels = channels
        self.attributes = attributes
    }

    /// The description classification and capture planning work on. Garbage is handled as for
    /// sysfs: a bad scale or matrix throws (the device is skipped); a bad rate list or clock name
    /// is a degradation.
    public func describe() throws(IIOAttributeError) -> IIODeviceDescription {
        var description = IIODeviceDescription(deviceName: id, name: name)
        description.label = attributes["label"].flatMap { $0.isEmpty ? nil : $0 }
        if let text = attributes["current_timestamp_clock"] {
            if let clock = IIOTimestampClock(rawValue: SysfsNumber.trim(text)) {
                description.timestampClock = clock
            } else {
                description.degradations.append(
                    error("current_timestamp_clock", .malformed(value: text, reason: "unknown clock name")))
            }
        }
        if let rate = try rate(attributes, "sampling_frequency") { description.samplingRates["sampling_frequency"] = rate }
        for (name, text) in attributes.sorted(by: { $0.key < $1.key })
        where name == "mount_matrix" || name.hasSuffix("_mount_matrix") {
            description.sysfsMountMatrices[name] = try matrix(name, text)
        }
        var hasScanElements = false
        for channel in channels where !channel.isOutput {
            if channel.id == "mount", let text = channel.attributes["matrix"] {
                // libiio 0.24 reads sysfs `in_mount_matrix` as a channel "mount" with attribute "matrix".
                description.sysfsMountMatrices["in_mount_matrix"] = try matrix("in_mount_matrix", text)
                continue
            }
            if channel.id == "timestamp" {
                if let scan = channel.scan {
                    description.timestampElement = ScanElementSpec(channel: channel.prefix, index: scan.index, type: scan.type)
                }
                continue
            }
            guard let id = IIOChannelID(prefix: channel.prefix) else { continue }
            var model = IIOChannel(id: id, hasRaw: channel.attributes["raw"] != nil, hasInput: channel.attributes["input"] != nil)
            if let text = channel.attributes["scale"] { model.scale = try decimal(channel.prefix + "_scale", text) }
            if let text = channel.attributes["offset"] { model.offset = try decimal(channel.prefix + "_offset", text) }
            if let scan = channel.scan {
                model.scanElement = IIOScanElement(index: scan.index, type: scan.type, isEnabled: false)
                hasScanElements = true
            }
            let shared = "in_\(id.type)_sampling_frequency"
            if description.samplingRates[shared] == nil, let rate = try rate(channel.attributes, "sampling_frequency", as: shared)
            {
                description.samplingRates[shared] = rate
            }
            if let text = channel.attributes["mount_matrix"], description.sysfsMountMatrices["in_\(id.type)_mount_matrix"] == nil
            {
                description.sysfsMountMatrices["in_\(id.type)_mount_matrix"] = try matrix(channel.prefix + "_mount_matrix", text)
            }
            description.channels.append(model)
        }
        description.channels.sort { $0.id.prefix < $1.id.prefix }
        if hasScanElements {
            // iiod runs the buffer; these names only satisfy the planner (no sysfs write is made).
            description.bufferDirectory = "buffer"
            description.scanElementDirectory = "scan_elements"
        }
        return description
    }

    private func rate(_ attributes: [String: String], _ name: String, as attribute: String? = nil) throws(IIOAttributeError)
        -> SamplingRate?
    {
        guard let text = attributes[name] else { return nil }
        let attribute = attribute ?? name
        var rate = SamplingRate(attribute: attribute, hertz: try decimal(attribute, text))
        if let available = attributes[name + "_available"] {
            rate.choices = try? SamplingFrequencyChoices(parsing: available)
        }
        return rate
    }

    private func decimal(_ attribute: String, _ text: String) throws(IIOAttributeError) -> Double {
        do throws(SysfsNumberError) {
            return try SysfsNumber.decimal(text)
        } catch {
            throw self.error(attribute, .malformed(value: text, reason: "not \(error.expected)"))
        }
    }

    private func matrix(_ attribute: String, _ text: String) throws(IIOAttributeError) -> MountMatrix {
        do throws(MountMatrixError) {
            return try MountMatrix(parsing: text)
        } catch {
            throw self.error(attribute, .malformed(value: text, reason: error.reason))
        }
    }

    private func error(_ attribute: String, _ problem: IIOAttributeError.Problem) -> IIOAttributeError {
        IIOAttributeError(device: id, attribute: attribute, problem: problem)
    }
}
