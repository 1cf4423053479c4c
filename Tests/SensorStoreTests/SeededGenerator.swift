import Foundation

/// A deterministic random source for property tests (SplitMix64): the same seed gives the same
/// cases on every machine, so a failure can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A standard normal variate (Box–Muller).
    mutating func gaussian() -> Double {
        let u1 = Double(next() >> 11 | 1) / Double(1 << 53)
        let u2 = Double(next() >> 11) / Double(1 << 53)
        return (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
    }
}

/// The reference accelerometer signal (100 Hz, ±20 µs jitter, z ≈ 1 g in int16 counts,
/// slow motion, σ = 2.5 LSB noise), small enough for a unit test.
func referenceAccelerometer(seconds: Int, start: Int64 = 1_000_000_000_000, seed: UInt64 = 7) -> (times: [Int64], axes: [[Int64]])
{
    var random = SeededGenerator(seed: seed)
    let count = seconds * 100
    var times = [Int64](), x = [Int64](), y = [Int64](), z = [Int64]()
    for i in 0..<count {
        times.append(start + Int64(i) * 10_000_000 + Int64(random.next() % 40_001) - 20_000)
        let s = Double(i) / 100
        func axis(_ phase: Double, _ base: Double) -> Int64 {
            let motion = 800 * sin(2 * .pi * s / 37 + phase) + 300 * sin(2 * .pi * s / 3.1 + 2 * phase)
            return Int64((base + motion + 2.5 * random.gaussian()).rounded())
        }
        x.append(axis(0.3, 0)); y.append(axis(1.7, 0)); z.append(axis(1.1, 16384))
    }
    return (times, [x, y, z])
}
