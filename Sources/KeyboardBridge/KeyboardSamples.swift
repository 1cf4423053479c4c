import SensorKitModel

/// What a keyboard's stream stores: its identity and one row per interval, timed at the
/// interval's end (so the last stored row of a crashed daemon ends exactly where its loss begins).
public enum KeyboardSamples {
    /// The stored columns, in order.
    static let columns: [SourceColumn] = [
        SourceColumn(name: "duration", scale: 1e-9, unit: "s"),
        SourceColumn(name: "taps", unit: "count"), SourceColumn(name: "deletes", unit: "count"),
        SourceColumn(name: "words", unit: "count"), SourceColumn(name: "characters", unit: "count"),
        SourceColumn(name: "episodes", unit: "count"), SourceColumn(name: "pauses", unit: "count"),
        SourceColumn(name: "typingDuration", scale: 1e-9, unit: "s"), SourceColumn(name: "overflows", unit: "count"),
    ]

    public static func descriptor(_ keyboard: KeyboardDevice, settings: KeyboardSettings) -> SourceDescriptor {
        SourceDescriptor(
            sensor: .keyboardMetrics, device: SRDevice.hostIdentifier, source: "evdev:" + keyboard.identity, columns: columns,
            details: ["driver": "evdev", "interval": "\(settings.intervalNanoseconds / 1_000_000_000)"])
    }

    public static func batch(_ intervals: [KeyboardInterval], boot: BootID, receivedAt: Int64) -> SourceBatch {
        let counts = intervals.map(\.counts)
        return SourceBatch(
            boot: boot, sensorTimes: intervals.map(\.end), receiveTimes: Array(repeating: receivedAt, count: intervals.count),
            columns: [
                intervals.map { $0.end &- $0.start }, counts.map { Int64($0.taps) }, counts.map { Int64($0.deletes) },
                counts.map { Int64($0.words) }, counts.map { Int64($0.characters) }, counts.map { Int64($0.episodes) },
                counts.map { Int64($0.pauses) }, counts.map(\.typingNanoseconds), counts.map { Int64($0.overflows) },
            ])
    }
}
