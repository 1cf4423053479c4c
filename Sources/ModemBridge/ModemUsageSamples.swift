import SensorKitModel

/// The two usage streams a modem host records and what each stores: one row per interval, timed
/// at the interval's end, of counts and durations only.
public enum ModemUsageSamples {
    public static let phoneSchema = SourceSchema<PhoneUsageFamily.Stored>(every: PhoneUsageFamily.kind)
    public static let messagesSchema = SourceSchema<MessagesUsageFamily.Stored>(every: MessagesUsageFamily.kind)

    public static func descriptor(_ usage: ModemUsageKind, settings: ModemSettings) -> SourceDescriptor {
        let details = ["driver": "modemmanager", "interval": "\(settings.intervalNanoseconds / 1_000_000_000)"]
        switch usage {
        case .phone:
            return SourceDescriptor(
                sensor: .phoneUsageReport, device: SRDevice.hostIdentifier, source: "modemmanager:calls",
                schema: phoneSchema, details: details)
        case .messages:
            return SourceDescriptor(
                sensor: .messagesUsageReport, device: SRDevice.hostIdentifier, source: "modemmanager:sms",
                schema: messagesSchema, details: details)
        }
    }

    /// The reports as one batch of `usage`'s stream.
    public static func batch(
        _ reports: [UsageReport], _ usage: ModemUsageKind, boot: BootID, receivedAt: Int64, for descriptor: SourceDescriptor
    ) -> SourceBatch {
        let times = reports.map(\.end)
        let received = Array(repeating: receivedAt, count: reports.count)
        let durations = reports.map { $0.end.subtractingSaturating($0.start) }
        switch usage {
        case .phone:
            var values = BatchValues<PhoneUsageFamily.Stored>()
            values[.duration] = durations
            values[.incomingCalls] = reports.map { Int64($0.phone.incomingCalls) }
            values[.outgoingCalls] = reports.map { Int64($0.phone.outgoingCalls) }
            values[.callDuration] = reports.map(\.phone.callNanoseconds)
            values[.uniqueContacts] = reports.map { Int64($0.phone.uniqueContacts) }
            return SourceBatch(boot: boot, sensorTimes: times, receiveTimes: received, values: values, for: descriptor)
        case .messages:
            var values = BatchValues<MessagesUsageFamily.Stored>()
            values[.duration] = durations
            values[.incomingMessages] = reports.map { Int64($0.messages.incomingMessages) }
            values[.outgoingMessages] = reports.map { Int64($0.messages.outgoingMessages) }
            values[.uniqueContacts] = reports.map { Int64($0.messages.uniqueContacts) }
            return SourceBatch(boot: boot, sensorTimes: times, receiveTimes: received, values: values, for: descriptor)
        }
    }
}

/// Which of the two usage streams.
public enum ModemUsageKind: Hashable, Sendable, CaseIterable {
    case phone, messages
}

/// How usage is counted (`[modem]` in the configuration).
public struct ModemSettings: Hashable, Sendable {
    /// The length of one report's interval (ns); 15 minutes by default, aligned to the wall
    /// clock's quarter hours.
    public var intervalNanoseconds: Int64

    public init(intervalNanoseconds: Int64 = 15 * 60 * 1_000_000_000) {
        self.intervalNanoseconds = intervalNanoseconds
    }
}
