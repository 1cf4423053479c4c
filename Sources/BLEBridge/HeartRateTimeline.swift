/// Heart Rate Service notifications put on the host timeline. HRS carries no device time, so a
/// measurement is stamped when it is received. Sensor contact drives `onWristState`: only values
/// 2 (not in contact) and 3 (in contact) are states; the first state after the stream starts is
/// recorded, then every change. A measurement taken without skin contact (value 2) is not a heart
/// rate and is not recorded as one (docs/ble.md, "Heart rate and wrist state").
public struct HeartRateTimeline: Sendable {
    public struct Beat: Equatable, Sendable {
        public var receiveTime: Int64
        public var beatsPerMinute: UInt16
        /// RR intervals (1/1024 s), oldest first, all of them.
        public var rrIntervals: [UInt16]
        public var energyExpendedKilojoules: UInt16?
    }

    public struct Output: Equatable, Sendable {
        public var beat: Beat?
        /// A wrist-state record: true on the wrist (in contact), false off it.
        public var wristState: Bool?
    }

    public private(set) var malformed = 0
    private var lastState: Bool?

    public init() {}

    /// Starts over (a new stake): the next contact state is recorded even if unchanged. A lost
    /// link does not call this — it is not a change of state.
    public mutating func restart() { lastState = nil }

    public mutating func receive(_ value: [UInt8], at receiveTime: Int64) -> Output {
        guard let measurement = try? HeartRateMeasurement(decoding: value) else {
            malformed += 1
            return Output()
        }
        var output = Output()
        if let state = measurement.sensorContact.isInContact, state != lastState {
            lastState = state
            output.wristState = state
        }
        if measurement.sensorContact != .notInContact {
            output.beat = Beat(
                receiveTime: receiveTime, beatsPerMinute: measurement.beatsPerMinute,
                rrIntervals: measurement.rrIntervals, energyExpendedKilojoules: measurement.energyExpendedKilojoules)
        }
        return output
    }
}
