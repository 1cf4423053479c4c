import SensorKitModel

/// Everything discovery knows about one IIO device, and the `SourceDescriptor` of each stream it
/// offers: which functions, buffered or polled, at which rate, with which mount matrix, location
/// and placement. Built from udev's facts and the sysfs description; pure, so what
/// `sensorkitctl devices` shows is tested without hardware.
public struct IIOChip: Hashable, Sendable {
    public let udev: UdevIIODevice
    public let description: IIODeviceDescription
    public let functions: [IIOSensorFunction]
    /// The shared buffer's plan, when at least one function is buffered.
    public let capturePlan: DeviceCapturePlan?
    /// hwdb `ACCEL_MOUNT_MATRIX` when present and valid; it wins over sysfs (docs/iio.md §12.4).
    public let udevMountMatrix: MountMatrix?
    /// Polling interval of each polled function, in nanoseconds.
    public let pollIntervals: [IIOSensorFunction.Kind: Int64]
    /// One line each for the log: degradations and rate fix-ups.
    public let problems: [String]
    /// What tells this device's streams apart from every other IIO device's (`sourceID`).
    public let identity: IIOSourceIdentity
    /// Why the device's buffer is not used although it has one ("could not be enabled: …"); its
    /// functions are then polled (`description` has no buffer) and the listing says so.
    public let bufferRefusal: String?

    /// How often polled functions are read when the device says nothing better.
    public struct Polling: Hashable, Sendable {
        /// `in_steps_input` (cumulative): each read closes one `CMPedometerData` interval.
        public var steps: Int64 = 5_000_000_000
        /// Light sensors without an integration time or rate.
        public var light: Int64 = 500_000_000
        /// Anything else without a rate (motion, pressure).
        public var other: Int64 = 100_000_000
        public init() {}
    }

    /// Examines a device. Throws when its buffered layout is impossible (two elements claim one
    /// `_index`); otherwise degraded parts are reported in `problems` and left out.
    public init(
        udev: UdevIIODevice, description: IIODeviceDescription, triggers: [String] = [],
        integrationTime: Double? = nil, polling: Polling = Polling(), earlierTwins: Int = 0,
        configuredRates: [IIOSensorFunction.Kind: Double] = [:], bufferRefusal: String? = nil
    ) throws(ScanLayoutError) {
        self.udev = udev
        self.bufferRefusal = bufferRefusal
        self.description = description
        identity = IIOSourceIdentity(label: description.label, earlierTwins: earlierTwins)
        var problems = description.degradations.map { problem in
            problem.attribute.hasPrefix((description.scanElementDirectory ?? "scan_elements") + "/")
                ? "\(problem); not using the buffer of \(description.name), polling its sysfs values instead"
                : "\(problem), ignoring"
        }
        var matrix: MountMatrix?
        do throws(MountMatrixError) {
            matrix = try udev.accelMountMatrix()
        } catch {
            problems.append("\(description.deviceName): udev ACCEL_MOUNT_MATRIX: \(error); using the sysfs matrix instead")
        }
        udevMountMatrix = matrix
        functions = IIOSensorFunction.functions(of: description)
        let plan = try DeviceCapturePlan(
            description: description, functions: functions, triggers: triggers,
            configuredRates: configuredRates)
        capturePlan = plan
        problems += plan?.notes ?? []
        var intervals: [IIOSensorFunction.Kind: Int64] = [:]
        for function in functions where function.capture == .polled {
            let rate = FunctionRate(function: function, description: description, configured: configuredRates[function.kind])
            switch function.kind {
            case .stepCounter:
                intervals[function.kind] = polling.steps
            case .ambientLight:
                let seconds = (rate.isConfigured ? nil : integrationTime) ?? rate.hertz.map { 1 / $0 }
                intervals[function.kind] = seconds.map { Self.clamp($0, 0.1, 2) } ?? polling.light
            default:
                intervals[function.kind] = rate.hertz.map { Self.clamp(1 / $0, 0.01, 1) } ?? polling.other
            }
        }
        pollIntervals = intervals
        // A singular matrix (a quirk typed wrong) collapses an axis; it is still applied as given,
        // since guessing a fix would be worse, and one line names where it came from.
        for function in functions where function.kind == .accelerometer || function.kind == .gyroscope {
            let conversion = MotionConversion(function: function, device: description, udevMountMatrix: matrix)
            let r = conversion.matrix.rows
            let determinant =
                r[0].x * (r[1].y * r[2].z - r[1].z * r[2].y) - r[0].y * (r[1].x * r[2].z - r[1].z * r[2].x)
                + r[0].z * (r[1].x * r[2].y - r[1].y * r[2].x)
            let line =
                "\(description.deviceName): \(conversion.matrixSource) '\(conversion.matrix)' is singular (determinant 0): "
                + "an axis is lost; applied as given, the quirk should be fixed upstream"
            if abs(determinant) < 1e-9, !problems.contains(line) { problems.append(line) }
        }
        self.problems = problems
    }

    /// Stable identity of the chip's streams (`IIOSourceIdentity`): part name, label, place among
    /// same-named siblings and the parent device's sysfs path.
    public var sourceID: String { identity.sourceID(name: description.name, syspath: udev.syspath) }

    /// `display` or `base` for motion sensors: hwdb `ACCEL_LOCATION`, else the `label`
    /// (`accel-base`, `accel-display`), else unknown.
    public var location: String? {
        if let location = udev.accelLocation, !location.isEmpty { return location }
        switch description.label {
        case "accel-base"?: return "base"
        case "accel-display"?: return "display"
        default: return nil
        }
    }

    /// `SRAmbientLightSample.SensorPlacement` raw value for a light sensor, from our udev property
    /// `SENSORKIT_ALS_PLACEMENT` (hwdb/udev rules: `frontTop`, `front-top`, or the number) or a
    /// `label` such as `als-front-top`; nil when neither says.
    public var placement: Int? {
        for text in [udev.properties["SENSORKIT_ALS_PLACEMENT"], description.label].compactMap({ $0 }) {
            if let number = Int(text), SRAmbientLightSample.SensorPlacement(rawValue: number) != nil { return number }
            var key = text.lowercased().filter { $0 != "-" && $0 != "_" }
            if key.hasPrefix("als") { key.removeFirst(3) }
            if let match = SRAmbientLightSample.SensorPlacement.allCases.first(where: { "\($0)".lowercased() == key }) {
                return match.rawValue
            }
        }
        return nil
    }

    /// The mount matrix a motion function is mapped with and where it came from.
    public func mountMatrix(for function: IIOSensorFunction) -> (matrix: MountMatrix, source: MotionConversion.MatrixSource) {
        let conversion = MotionConversion(function: function, device: description, udevMountMatrix: udevMountMatrix)
        return (conversion.matrix, conversion.matrixSource)
    }

    /// How the scans get boottime stamps, as predicted before the buffer runs: `boottime` where the
    /// kernel has `current_timestamp_clock` (we select it), else realtime mapped (kernels < 4.5).
    public var predictedTimestamps: TimestampMapping {
        TimestampMapping(
            hasTimestamp: description.timestampElement != nil,
            clock: description.timestampClock == nil ? nil : .boottime)
    }

    // MARK: Streams

    /// How one column's integers are read.
    public enum ColumnSource: Hashable, Sendable {
        /// Raw counts: from the scan (buffered) or `<prefix>_raw` (polled), with the channel's
        /// scale and offset kept as the column's.
        case raw(IIOChannelID)
        /// `<prefix>_input`, already in the ABI unit, stored in millionths (scale 1e-6).
        case input(IIOChannelID)
        /// `<prefix>_input` that is a count (`in_steps_input`), stored as is.
        case inputCount(IIOChannelID)
        /// The polling interval's end, `CLOCK_BOOTTIME` ns (pedometer `end`).
        case intervalEnd
    }

    /// One stream's columns in order, each with where its integers come from; names and units
    /// are the stored schema of the function's sensor family (`Families/`).
    public func columns(for function: IIOSensorFunction) -> [(SourceColumn, ColumnSource)] {
        var columns: [(SourceColumn, ColumnSource)] = []
        for role in IIOSensorFunction.Role.allCases {
            guard let id = function.channels[role], let channel = description.channel(id.prefix) else { continue }
            let useInput = function.capture == .polled && channel.hasInput
            if useInput && role == .steps {
                columns.append((Self.storedColumn(role, kind: function.kind) { .count($0) }, .inputCount(id)))
            } else if useInput {
                columns.append(
                    (Self.storedColumn(role, kind: function.kind) { .count(scale: 1e-6, offset: 0, unit: $0) }, .input(id)))
            } else {
                let (scale, offset) = (channel.scale ?? 1, channel.offset ?? 0)
                columns.append(
                    (Self.storedColumn(role, kind: function.kind) { .count(scale: scale, offset: offset, unit: $0) }, .raw(id)))
            }
        }
        if function.kind == .stepCounter {
            // A boot-clock instant kept as ns counts, which the family maps with the boot's anchor
            // (docs/store.md, "Column kinds": stored this way before boot instants existed).
            let end = PedometerFamily.Stored.end
            columns.append((SourceColumn(end, .count(PedometerFamily.storedUnit(end))), .intervalEnd))
        }
        return columns
    }

    /// The descriptor of the stream `function` feeds.
    public func descriptor(for function: IIOSensorFunction) -> SourceDescriptor {
        // Identity: stable facts only; sentences for a person go in `notes` (shown, never stored).
        var notes: [String: String] = [:]
        var details: [String: String] = [
            "chip": description.name,
            "iioDevice": description.deviceName,
            "syspath": udev.syspath,
            "capture": function.capture.rawValue,
            "channels": function.orderedChannels.map(\.prefix).joined(separator: ", "),
        ]
        if let label = description.label { details["label"] = label }
        if let devnode = udev.devnode { details["devnode"] = devnode }
        switch function.capture {
        case .buffered:
            let rate = capturePlan?.rates[function.kind] ?? FunctionRate(function: function, description: description)
            details["samplingFrequency"] = rate.summary
            details["timestamps"] = predictedTimestamps.description
            if let plan = capturePlan {
                details["scanBytes"] = String(plan.layout.scanBytes)
                if let trigger = plan.plan.trigger ?? description.currentTrigger { details["trigger"] = trigger }
            }
        case .polled:
            let interval = pollIntervals[function.kind] ?? 1_000_000_000
            details["samplingFrequency"] = "polled every \(SampleBatcher.milliseconds(interval))"
            details["timestamps"] = "read time (sysfs polled)"
            if let bufferRefusal { notes["buffer"] = bufferRefusal + "; polling sysfs instead" }
        }
        if function.kind == .accelerometer || function.kind == .gyroscope {
            let (matrix, source) = mountMatrix(for: function)
            details[MotionFamily.mountMatrixDetail] = matrix.description
            details["mountMatrixSource"] = source.description
            if let location { details["location"] = location }
        }
        if function.kind == .ambientLight, let placement { details[LightFamily.placementDetail] = String(placement) }
        if function.kind == .ambientLight, let id = function.channels[.illuminance] {
            notes["lux"] =
                id.type == "illuminance"
                ? "\(id.prefix) (lux by the ABI)"
                : "\(id.prefix): a HID sensor hub reports its illuminance usage (lux) in this channel on drivers without in_illuminance"
        }
        return SourceDescriptor(
            sensor: function.kind.sensor, device: SRDevice.hostIdentifier, source: sourceID,
            orderedColumns: columns(for: function).map(\.0), details: details, notes: notes)
    }

    /// The stored column a role's channel becomes: its family's key, with the kind `count` makes
    /// of the family's unit for it.
    static func storedColumn(
        _ role: IIOSensorFunction.Role, kind: IIOSensorFunction.Kind, _ count: (String) -> ColumnKind
    ) -> SourceColumn {
        func motion(_ column: MotionFamily.Stored) -> SourceColumn {
            SourceColumn(column, count(MotionFamily.storedUnit(kind.sensor)))
        }
        func light(_ column: LightFamily.Stored) -> SourceColumn { SourceColumn(column, count(LightFamily.storedUnit(column))) }
        func pressure(_ column: PressureFamily.Stored) -> SourceColumn {
            SourceColumn(column, count(PressureFamily.storedUnit(column)))
        }
        switch role {
        case .x: return motion(.x)
        case .y: return motion(.y)
        case .z: return motion(.z)
        case .illuminance: return light(.illuminance)
        case .red: return light(.red)
        case .green: return light(.green)
        case .blue: return light(.blue)
        case .clear: return light(.clear)
        case .pressure: return pressure(.pressure)
        case .temperature: return pressure(.temperature)
        case .steps: return SourceColumn(PedometerFamily.Stored.steps, count(PedometerFamily.storedUnit(.steps)))
        }
    }

    private static func clamp(_ seconds: Double, _ low: Double, _ high: Double) -> Int64 {
        Int64((min(max(seconds, low), high) * 1e9).rounded())
    }
}
