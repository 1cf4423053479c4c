import Dispatch
import Glibc
import SensorSystem

/// An emulated wearable that lives on its own: an `EmulatedPeripheral` fed with `WearableSignals`
/// in real time — a heart-rate notification every second, ECG frames (130 Hz, 73 samples),
/// compressed ACC frames (50 Hz, 25 samples, mG), compressed PPG frames (55 Hz, 20 samples) and a
/// PPI frame a second with that second's pulses while the client runs those streams — stamped by a
/// device clock counting nanoseconds since 2000-01-01 as Polar devices do. Faults: the link
/// dropped every N seconds, the device clock restarting at 2019-01-01 (an H10 taken off its strap).
public final class EmulatedWearable: @unchecked Sendable {
    public struct Faults: Sendable {
        /// Seconds between links dropped by the wearable; nil: never.
        public var disconnectEvery: Double?
        /// Seconds after start at which the device clock restarts at 2019-01-01; nil: never.
        public var clockResetAfter: Double?
        /// The largest ATT MTU the wearable accepts (an H10 refuses ECG below 232).
        public var serverMTU: UInt16?
        /// Hostile: pairs a second of a good PMD frame and an undecodable one while a stream runs.
        public var floodUndecodable: Int?
        public init(disconnectEvery: Double? = nil, clockResetAfter: Double? = nil, serverMTU: UInt16? = nil) {
            self.disconnectEvery = disconnectEvery
            self.clockResetAfter = clockResetAfter
            self.serverMTU = serverMTU
        }
    }

    static let ecgRate = 130.0
    static let ecgFrameSamples = 73
    static let ppgRate = 55.0
    static let ppgFrameSamples = 20
    static let accRate = 50.0
    static let accFrameSamples = 25
    /// Nanoseconds from 1970-01-01 to 2000-01-01, the PMD epoch.
    static let pmdEpochOffset: Int64 = 946_684_800_000_000_000
    /// 2019-01-01T00:00:00Z in PMD time: where an H10's clock restarts.
    static let h10ResetTime: UInt64 = 599_616_000_000_000_000

    public let peripheral: EmulatedPeripheral
    public let faults: Faults
    private let queue = DispatchQueue(label: "emulated-wearable")
    private var timer: (any DispatchSourceTimer)?
    private var signals = WearableSignals()
    private let startMonotonic: Int64
    private let startDevice: UInt64
    private var heartRateSecond = 1
    private var ecgNext = 0
    private var ppgNext = 0
    private var accNext = 0
    private var nextDisconnect: Double?
    private var floodSent = 0
    private var floodDevice: UInt64 = 0

    public init(directory: String, profile: EmulatedPeripheral.Profile, faults: Faults = Faults()) throws {
        peripheral = try EmulatedPeripheral(directory: directory, profile: profile)
        self.faults = faults
        if let mtu = faults.serverMTU { peripheral.setFaults { $0.serverMTU = mtu } }
        startMonotonic = try SystemCalls.clockNanoseconds(CLOCK_MONOTONIC)
        let wall = try SystemCalls.clockNanoseconds(CLOCK_REALTIME)
        startDevice = UInt64(max(0, wall &- Self.pmdEpochOffset))
        nextDisconnect = faults.disconnectEvery.map { max($0, 0.1) }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now(), repeating: .milliseconds(20))
        timer.setEventHandler { [weak self] in self?.tick() }
        timer.resume()
        self.timer = timer
    }

    /// Stops the signals; both entries disappear and the link drops (out of range).
    public func stop() {
        queue.sync {
            timer?.cancel()
            timer = nil
        }
        peripheral.remove()
    }

    deinit { timer?.cancel() }

    /// Device time (ns since 2000-01-01) at `time` seconds after start.
    func deviceTime(at time: Double) -> UInt64 {
        if let reset = faults.clockResetAfter, time >= reset {
            return Self.h10ResetTime &+ UInt64((time - reset) * 1e9)
        }
        return startDevice &+ UInt64(max(0, time) * 1e9)
    }

    private func tick() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let monotonic = try? SystemCalls.clockNanoseconds(CLOCK_MONOTONIC) else { return }
        let now = Double(monotonic - startMonotonic) / 1e9
        if let due = nextDisconnect, now >= due, let every = faults.disconnectEvery {
            peripheral.disconnect()
            nextDisconnect = due + max(every, 0.1)
        }
        let profile = peripheral.profile
        while profile.heartRate, Double(heartRateSecond) <= now {
            let value = signals.heartRateMeasurement(
                from: Double(heartRateSecond - 1), to: Double(heartRateSecond), withRR: !profile.pmdTypes.contains(1))
            peripheral.notifyHeartRate(value)
            if peripheral.runningMeasurements.contains(3) {
                let intervals = signals.pulseIntervals(from: Double(heartRateSecond - 1), to: Double(heartRateSecond))
                if !intervals.isEmpty {
                    // Skin contact, supported; error estimates of a few ms as the device reports.
                    peripheral.sendPPI(
                        intervals: intervals.map {
                            .init(beatsPerMinute: $0.beatsPerMinute, milliseconds: $0.milliseconds, errorEstimate: 6, flags: 0x06)
                        })
                }
            }
            heartRateSecond += 1
        }
        let running = peripheral.runningMeasurements
        if let pairs = faults.floodUndecodable, let type = running.first {
            flood(type: type, due: Int(now * Double(pairs)), at: now)
            return
        }
        if profile.pmdTypes.contains(0) {
            ecgNext = stream(
                running: running.contains(0), next: ecgNext, rate: Self.ecgRate, frame: Self.ecgFrameSamples, now: now
            ) { first, count in
                let samples = (first..<first + count).map { signals.electrocardiogram(at: Double($0) / Self.ecgRate) }
                peripheral.sendECG(timestamp: deviceTime(at: Double(first + count - 1) / Self.ecgRate), microvolts: samples)
            }
        }
        if profile.pmdTypes.contains(2) {
            accNext = stream(
                running: running.contains(2), next: accNext, rate: Self.accRate, frame: Self.accFrameSamples, now: now
            ) { first, count in
                let samples = (first..<first + count).map { signals.acceleration(at: Double($0) / Self.accRate) }
                peripheral.sendACC(
                    timestamp: deviceTime(at: Double(first + count - 1) / Self.accRate), samples: samples, compressed: true)
            }
        }
        if profile.pmdTypes.contains(1) {
            ppgNext = stream(
                running: running.contains(1), next: ppgNext, rate: Self.ppgRate, frame: Self.ppgFrameSamples, now: now
            ) { first, count in
                let samples = (first..<first + count).map { signals.photoplethysmogram(at: Double($0) / Self.ppgRate) }
                peripheral.sendPPG(
                    timestamp: deviceTime(at: Double(first + count - 1) / Self.ppgRate), samples: samples, compressed: true)
            }
        }
    }

    /// The flood: every pair due by now, a 13-sample frame then the same header with a partial
    /// sample, device time advancing 100 ms a pair (bounded per tick so the timer keeps its pace).
    private func flood(type: UInt8, due: Int, at now: Double) {
        if floodDevice == 0 { floodDevice = deviceTime(at: now) }
        var sent = 0
        while floodSent < due, sent < 10_000 {
            floodDevice &+= 100_000_000
            let header = [type] + (0..<8).map { UInt8(truncatingIfNeeded: floodDevice >> (8 * $0)) } + [0x00]
            let sample: [UInt8] = type == 0 ? [1, 0, 0] : [UInt8](repeating: 1, count: 12)
            peripheral.sendRawFrame(header + (0..<13).flatMap { _ in sample })
            peripheral.sendRawFrame(header + [1, 2])
            floodSent += 1
            sent += 1
        }
        floodSent = max(floodSent, due - 10_000)
    }

    /// Sends every whole frame whose last sample is due; a stream that is not running skips to now.
    private func stream(running: Bool, next: Int, rate: Double, frame: Int, now: Double, send: (Int, Int) -> Void) -> Int {
        let due = Int(now * rate)
        guard running else { return max(next, due) }
        var first = next
        while first + frame <= due {
            send(first, frame)
            first += frame
        }
        return first
    }
}
