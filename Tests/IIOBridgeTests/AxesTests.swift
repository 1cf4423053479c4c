import SensorKitModel
import Testing

@testable import IIOBridge

/// The sign convention (docs/design-notes/0002-axes.md): after the mount matrix, Linux readings
/// of a device at rest follow the convention iio-sensor-proxy and systemd's hwdb are tuned to,
/// which is CoreMotion's — so the mapping is m/s² ÷ 9.80665 with no sign change. One test per
/// orientation; each would fail if a sign were flipped on that axis.
@Suite struct AxesTests {
    static let g = 9.80665
    static let identity = MotionConversion(kind: .accelerometer, x: .identity, y: .identity, z: .identity)
    let tree = FakeSysfsTree()

    static func expectClose(_ value: SIMD3<Double>, _ expected: SIMD3<Double>, sourceLocation: SourceLocation = #_sourceLocation)
    {
        let error = value - expected
        #expect(max(abs(error.x), abs(error.y), abs(error.z)) < 1e-12, "\(value) ≠ \(expected)", sourceLocation: sourceLocation)
    }

    @Test func uprightPortraitReadsMinusOneGOnY() {
        Self.expectClose(Self.identity.convert(processed: SIMD3(0, -Self.g, 0)), SIMD3(0, -1, 0))
    }

    @Test func upsideDownPortraitReadsPlusOneGOnY() {
        Self.expectClose(Self.identity.convert(processed: SIMD3(0, Self.g, 0)), SIMD3(0, 1, 0))
    }

    @Test func faceUpOnATableReadsMinusOneGOnZ() {
        Self.expectClose(Self.identity.convert(processed: SIMD3(0, 0, -Self.g)), SIMD3(0, 0, -1))
    }

    @Test func faceDownReadsPlusOneGOnZ() {
        Self.expectClose(Self.identity.convert(processed: SIMD3(0, 0, Self.g)), SIMD3(0, 0, 1))
    }

    @Test func leftEdgeDownReadsMinusOneGOnX() {
        Self.expectClose(Self.identity.convert(processed: SIMD3(-Self.g, 0, 0)), SIMD3(-1, 0, 0))
    }

    @Test func rightEdgeDownReadsPlusOneGOnX() {
        Self.expectClose(Self.identity.convert(processed: SIMD3(Self.g, 0, 0)), SIMD3(1, 0, 0))
    }

    /// A chip mounted a quarter turn off, so upright portrait makes the *chip* read +1 g on its x
    /// axis. The hwdb matrix brings it to the device frame; the sysfs one (identity here) would
    /// not — udev wins.
    @Test func udevMatrixTurnsARotatedChipUpright() throws {
        let device = tree.addDevice(0, ChipFixtures.merge(ChipFixtures.bmi160, ["in_accel_scale": "1"]))
        let description = try device.describe()
        let accel = try #require(IIOSensorFunction.function(kind: .accelerometer, of: description))
        let hwdb = try MountMatrix(parsing: "0, 1, 0; -1, 0, 0; 0, 0, 1")
        let rotated = MotionConversion(function: accel, device: description, udevMountMatrix: hwdb)
        Self.expectClose(rotated.convert(processed: SIMD3(Self.g, 0, 0)), SIMD3(0, -1, 0))
        let sysfsOnly = MotionConversion(function: accel, device: description, udevMountMatrix: nil)
        Self.expectClose(sysfsOnly.convert(processed: SIMD3(Self.g, 0, 0)), SIMD3(1, 0, 0))
    }

    @Test func gyroscopeKeepsRadiansPerSecondThroughTheMatrix() {
        let matrix = MountMatrix(rows: [SIMD3(-1, 0, 0), SIMD3(0, -1, 0), SIMD3(0, 0, 1)])!
        let gyro = MotionConversion(
            kind: .gyroscope, x: .identity, y: .identity, z: .identity, matrix: matrix, matrixSource: .udev)
        #expect(gyro.convert(processed: SIMD3(0.5, -0.25, 2)) == SIMD3(-0.5, 0.25, 2))
    }

    @Test func offsetIsAddedBeforeScale() {
        let accel = MotionConversion(
            kind: .accelerometer, x: ChannelCalibration(scale: 0.5, offset: 2),
            y: .identity, z: .identity)
        #expect(accel.convert(rawX: 8, rawY: 0, rawZ: 0).x == (8 + 2) * 0.5 / Self.g)
    }
}
