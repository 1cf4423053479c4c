import SensorKitModel

/// What a keyboard's stream stores: its identity and one row per interval, timed at the
/// interval's end (so the last stored row of a crashed daemon ends exactly where its loss begins).
public enum KeyboardSamples {
    public static let schema = SourceSchema<KeyboardMetricsFamily.Stored>(every: KeyboardMetricsFamily.kind)

    public static func descriptor(_ keyboard: KeyboardDevice, settings: KeyboardSettings) -> SourceDescriptor {
        SourceDescriptor(
            sensor: .keyboardMetrics, device: SRDevice.hostIdentifier, source: "evdev:" + keyboard.identity, schema: schema,
            details: ["driver": "evdev", "interval": "\(settings.intervalNanoseconds / 1_000_000_000)"])
    }

    public static func batch(_ intervals: [KeyboardInterval], boot: BootID, receivedAt: Int64, for descriptor: SourceDescriptor)
        -> SourceBatch
    {
        let counts = intervals.map(\.counts)
        var values = BatchValues<KeyboardMetricsFamily.Stored>()
        values[.duration] = intervals.map { $0.end.subtractingSaturating($0.start) }
        values[.taps] = counts.map { Int64($0.taps) }
        values[.deletes] = counts.map { Int64($0.deletes) }
        values[.words] = counts.map { Int64($0.words) }
        values[.characters] = counts.map { Int64($0.characters) }
        values[.episodes] = counts.map { Int64($0.episodes) }
        values[.pauses] = counts.map { Int64($0.pauses) }
        values[.typingDuration] = counts.map(\.typingNanoseconds)
        values[.overflows] = counts.map { Int64($0.overflows) }
        return SourceBatch(
            boot: boot, sensorTimes: intervals.map(\.end), receiveTimes: Array(repeating: receivedAt, count: intervals.count),
            values: values, for: descriptor)
    }
}
