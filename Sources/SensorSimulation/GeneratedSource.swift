import Dispatch
import SensorKitModel
import SensorSystem
import Synchronization

/// A source that samples a deterministic signal on a timer, stamped with the boot clock: what a
/// buffered IIO accelerometer delivers, without hardware. Sample i has raw columns
/// `(i mod 1000, −(i mod 1000), 1000)` so a test can check every value it fetches. Its timer runs
/// on the injected scheduler and its samples are stamped by the injected clock: the real ones by
/// default, a `ManualTime` (as both) in a test that moves time by hand.
public final class GeneratedSource: SensorSource, @unchecked Sendable {
    // @unchecked: `timer`, `index`, `nextTime` and `ticks` are confined to `queue`.
    public let descriptor: SourceDescriptor
    private let queue = DispatchQueue(label: "test.generated-source")
    private let clock: any SystemClock
    private let scheduler: any Scheduler
    private let period: Int64
    private let perTick: Int
    private var timer: (any ScheduledTimer)?
    private var index: Int64 = 0
    private var nextTime: Int64 = 0
    private let gapEvery: Int
    private var ticks = 0
    private let values: @Sendable (Int64) -> (Int64, Int64, Int64)

    /// `rate` samples per second, delivered `perTick` at a time. With `gapEvery` n > 0, every
    /// n-th tick's samples are lost and reported as the source's own gap (a deletion record).
    /// `values` gives sample i's raw columns (default `raw`; a test that looks for a sample's
    /// bytes in files gives values that do not compress to repeating patterns).
    public init(
        sensor: SRSensor = .accelerometer, rate: Int = 100, perTick: Int = 10, gapEvery: Int = 0,
        clock: any SystemClock = LinuxSystemClock(), scheduler: any Scheduler = DispatchScheduler(),
        values: @escaping @Sendable (Int64) -> (Int64, Int64, Int64) = GeneratedSource.raw
    ) {
        self.values = values
        self.clock = clock
        self.scheduler = scheduler
        self.period = 1_000_000_000 / Int64(rate)
        self.perTick = perTick
        self.gapEvery = gapEvery
        // Motion: scale 9.80665/1000 m/s² per count, so 1000 counts = 1 g exactly. Light: the
        // first column is illuminance in lux (0.5 lux per count).
        let (source, details) = ("generated:\(sensor.rawValue)", ["driver": "generated", "rate": "\(rate)"])
        descriptor =
            sensor == .ambientLightSensor
            ? SourceDescriptor(
                sensor: sensor, device: SRDevice.hostIdentifier, source: source, schema: Self.lightSchema, details: details)
            : SourceDescriptor(
                sensor: sensor, device: SRDevice.hostIdentifier, source: source, schema: Self.motionSchema, details: details)
    }

    static let motionSchema = SourceSchema<MotionFamily.Stored>(every: { _ in
        .count(scale: 0.00980665, offset: 0, unit: "m/s^2")
    })
    static let lightSchema = SourceSchema<LightFamily.Stored>([
        .illuminance: .count(scale: 0.5, offset: 0, unit: "lx"), .red: .count("counts"), .green: .count("counts"),
    ])

    /// Sample columns by position: the first three of the family's columns the stream has.
    private func batch(boot: BootID, times: [Int64], receiveTimes: [Int64], _ columns: [[Int64]]) -> SourceBatch {
        if descriptor.sensor == .ambientLightSensor {
            var values = BatchValues<LightFamily.Stored>()
            (values[.illuminance], values[.red], values[.green]) = (columns[0], columns[1], columns[2])
            return SourceBatch(boot: boot, sensorTimes: times, receiveTimes: receiveTimes, values: values, for: descriptor)
        }
        var values = BatchValues<MotionFamily.Stored>()
        (values[.x], values[.y], values[.z]) = (columns[0], columns[1], columns[2])
        return SourceBatch(boot: boot, sensorTimes: times, receiveTimes: receiveTimes, values: values, for: descriptor)
    }

    /// The raw values of sample `i`.
    public static func raw(_ i: Int64) -> (Int64, Int64, Int64) { (i % 1000, -(i % 1000), 1000) }

    public func setRecording(_ recording: Bool, deliver: @escaping @Sendable (SourceEvent) -> Void) {
        queue.async {
            if !recording {
                self.timer?.cancel()
                self.timer = nil
                return
            }
            guard self.timer == nil else { return }
            self.nextTime = self.clock.boottimeNanoseconds()
            self.timer = self.scheduler.schedule(
                on: self.queue, after: 0, repeating: self.period * Int64(self.perTick)
            ) { [weak self] in self?.tick(deliver) }
        }
    }

    /// Whether its timer runs: recording starts and stops asynchronously, so a test that moves
    /// time by hand waits for this before it counts on (or against) the next tick.
    public var isRecording: Bool { queue.sync { timer != nil } }

    private func tick(_ deliver: @Sendable (SourceEvent) -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        let now = clock.boottimeNanoseconds()
        ticks += 1
        if gapEvery > 0, ticks % gapEvery == 0, index > 0, nextTime <= now {
            let last = nextTime - period
            while nextTime <= now {
                index += 1
                nextTime += period
            }
            deliver(
                .gap(
                    from: BootInstant(boot: clock.bootID, nanoseconds: last),
                    to: BootInstant(boot: clock.bootID, nanoseconds: nextTime), reason: .systemInitiated, why: "generated gap"))
            return
        }
        var times: [Int64] = [], xs: [Int64] = [], ys: [Int64] = [], zs: [Int64] = []
        while nextTime <= now {
            let (x, y, z) = values(index)
            times.append(nextTime)
            xs.append(x)
            ys.append(y)
            zs.append(z)
            index += 1
            nextTime += period
        }
        guard !times.isEmpty else { return }
        deliver(
            .samples(
                batch(boot: clock.bootID, times: times, receiveTimes: Array(repeating: now, count: times.count), [xs, ys, zs])))
    }

    public func close() {
        queue.sync {
            timer?.cancel()
            timer = nil
        }
    }
}
