import Foundation
import SensorTestKit
import Testing

/// `scripts/demo_rig.py`'s signals are physically consistent with docs/design-notes/0002-axes.md
/// once the daemon applies the fixture's mount matrix: face up on the table reads z = −1 g, the
/// tilt towards the viewer turns y negative, and the gyroscope's integral matches the change of
/// the gravity direction the accelerometer shows, in every phase.
struct DemoRigTests {
    static let top = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    struct Sample {
        var t: Double
        var accel: [Double]  // g, device axes
        var gyro: [Double]  // rad/s, device axes
    }

    /// The rig's script decoded (docs/iio.md §12.8 escapes), the fixture's scales and udev matrix applied.
    static func samples() throws -> [Sample] {
        let fixture = try String(contentsOfFile: top + "/Tests/Fixtures/iio/bmi160.umockdev", encoding: .utf8)
        func value(_ prefix: String) throws -> String {
            let line = try #require(fixture.split(separator: "\n").first { $0.hasPrefix(prefix) }, "\(prefix)")
            return String(line.dropFirst(prefix.count)).replacingOccurrences(of: "\\n", with: "")
        }
        let accelScale = try #require(Double(try value("A: in_accel_scale=")))
        let gyroScale = try #require(Double(try value("A: in_anglvel_scale=")))
        let matrix = try value("E: ACCEL_MOUNT_MATRIX=").split(separator: ";")
            .map { $0.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces))! } }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestEnvironment.python)
        process.arguments = [top + "/scripts/demo_rig.py", "8", "--lead", "0"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let script = [UInt8](pipe.fileHandleForReading.readDataToEndOfFile())
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)

        var bytes: [UInt8] = []
        for line in script.split(separator: 0x0A) {
            // "r <ms> <data>": the data starts after the second space.
            let secondSpace = try #require(line.indices.filter { line[$0] == 0x20 }.dropFirst().first)
            var index = secondSpace + 1
            while index < line.endIndex {
                if line[index] == 0x5E, index + 1 < line.endIndex {
                    bytes.append(line[index + 1] == 0x60 ? 0x5E : line[index + 1] &- 64)
                    index += 2
                } else {
                    bytes.append(line[index])
                    index += 1
                }
            }
        }
        #expect(bytes.count == 800 * 24)
        func s16(_ offset: Int) -> Double { Double(Int16(bitPattern: UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8)) }
        func device(_ chip: [Double]) -> [Double] { matrix.map { row in zip(row, chip).reduce(0) { $0 + $1.0 * $1.1 } } }
        return stride(from: 0, to: bytes.count, by: 24).enumerated().map { index, offset in
            Sample(
                t: Double(index) / 100,
                accel: device((3..<6).map { s16(offset + 2 * $0) * accelScale }).map { $0 / 9.80665 },
                gyro: device((0..<3).map { s16(offset + 2 * $0) * gyroScale }))
        }
    }

    @Test func theDemoRigMovesLikeATabletInTheProjectsAxes() throws {
        let samples = try Self.samples()
        let table = samples.filter { $0.t < 2 }
        for axis in 0..<3 {
            let mean = table.map { $0.accel[axis] }.reduce(0, +) / Double(table.count)
            #expect(abs(mean - [0, 0, -1][axis]) < 0.01, "face up on a table reads (0, 0, −1) g; axis \(axis) reads \(mean)")
        }
        let lifted = try #require(samples.first { $0.t >= 3.99 })
        #expect(
            lifted.accel[1] < -0.85 && lifted.accel[2] < 0,
            "tilted towards the viewer: y near −1 g, screen still up: \(lifted.accel)")

        // Tilt θ about device x and roll φ about device y, as the accelerometer sees them, against
        // the gyroscope's integral over each stretch (rectangle rule at 100 Hz).
        func tilt(_ s: Sample) -> Double { atan2(-s.accel[1], hypot(s.accel[0], s.accel[2])) }
        func roll(_ s: Sample) -> Double { atan2(s.accel[0], -s.accel[2]) }
        for (from, to) in [(0.0, 2.0), (2.0, 3.99), (4.0, 5.5), (5.5, 7.99)] {
            let stretch = samples.filter { $0.t >= from && $0.t < to }
            let first = try #require(stretch.first), last = try #require(stretch.last)
            let turnedX = stretch.dropLast().map { $0.gyro[0] / 100 }.reduce(0, +)
            let turnedY = stretch.dropLast().map { $0.gyro[1] / 100 }.reduce(0, +)
            #expect(
                abs((tilt(last) - tilt(first)) - turnedX) < 0.03,
                "\(from)–\(to) s: tilt changed \(tilt(last) - tilt(first)) rad, gyro x integrates to \(turnedX)")
            #expect(
                abs((roll(last) - roll(first)) - turnedY) < 0.03,
                "\(from)–\(to) s: roll changed \(roll(last) - roll(first)) rad, gyro y integrates to \(turnedY)")
        }
    }
}
