import SensorKitModel

/// Turns an accelerometer's or gyroscope's three channels into CoreMotion's units in the device
/// frame: `(raw + offset) × scale` per axis (m/s² or rad/s), then the mount matrix, then for
/// acceleration ÷ 9.80665 to g — with **no sign change** (docs/design-notes/0002-axes.md;
/// docs/sensorkit-mapping.md). Pure; built once per stream, applied per sample.
public struct MotionConversion: Hashable, Sendable {
    /// Where the mount matrix came from, recorded as stream metadata.
    public enum MatrixSource: Hashable, Sendable, CustomStringConvertible {
        /// udev/hwdb `ACCEL_MOUNT_MATRIX`: the machine's quirk database knows best.
        case udev
        /// A sysfs attribute (`in_accel_mount_matrix`, `in_mount_matrix`, `mount_matrix`).
        case sysfs(attribute: String)
        /// Nothing said otherwise.
        case identity

        public var description: String {
            switch self {
            case .udev: "udev ACCEL_MOUNT_MATRIX"
            case let .sysfs(attribute): "sysfs \(attribute)"
            case .identity: "identity"
            }
        }
    }

    public let kind: IIOSensorFunction.Kind
    public let x: ChannelCalibration
    public let y: ChannelCalibration
    public let z: ChannelCalibration
    public let matrix: MountMatrix
    public let matrixSource: MatrixSource

    public init(
        kind: IIOSensorFunction.Kind, x: ChannelCalibration, y: ChannelCalibration, z: ChannelCalibration,
        matrix: MountMatrix = .identity, matrixSource: MatrixSource = .identity
    ) {
        precondition(kind == .accelerometer || kind == .gyroscope, "motion conversion of \(kind)")
        self.kind = kind
        self.x = x
        self.y = y
        self.z = z
        self.matrix = matrix
        self.matrixSource = matrixSource
    }

    /// The conversion for a classified motion function of `device`. The mount matrix is, in this
    /// order: udev `ACCEL_MOUNT_MATRIX` (hwdb; it applies to the gyroscope of the same chip too,
    /// since both share the chip's axes), then sysfs by the ABI's lookup order for the channel
    /// type, then the identity (iio-sensor-proxy's precedence, docs/iio.md §12.4).
    public init(function: IIOSensorFunction, device: IIODeviceDescription, udevMountMatrix: MountMatrix?) {
        precondition(function.kind == .accelerometer || function.kind == .gyroscope, "motion conversion of \(function.kind)")
        func calibration(_ role: IIOSensorFunction.Role) -> ChannelCalibration {
            guard let id = function.channels[role], let channel = device.channel(id.prefix) else {
                preconditionFailure("motion function without its \(role) channel")
            }
            return channel.calibration
        }
        let type = function.kind == .accelerometer ? "accel" : "anglvel"
        var matrix = MountMatrix.identity
        var source = MatrixSource.identity
        if let udevMountMatrix {
            matrix = udevMountMatrix
            source = .udev
        } else if let attribute = IIOChannelID.sharedAttributeNames(type: type, info: "mount_matrix")
            .first(where: { device.sysfsMountMatrices[$0] != nil })
        {
            matrix = device.sysfsMountMatrices[attribute]!
            source = .sysfs(attribute: attribute)
        }
        self.init(
            kind: function.kind, x: calibration(.x), y: calibration(.y), z: calibration(.z),
            matrix: matrix, matrixSource: source)
    }

    /// Raw counts of one sample (x, y, z as the chip reports them) → CoreMotion units
    /// (g for acceleration, rad/s for rotation rate) in the device frame.
    @inline(__always)
    public func convert(rawX: Int64, rawY: Int64, rawZ: Int64) -> SIMD3<Double> {
        convert(processed: SIMD3(x.value(raw: rawX), y.value(raw: rawY), z.value(raw: rawZ)))
    }

    /// Processed chip-frame values (m/s² or rad/s, e.g. from `_input`) → CoreMotion units.
    @inline(__always)
    public func convert(processed chip: SIMD3<Double>) -> SIMD3<Double> {
        let device = matrix.apply(chip)
        guard kind == .accelerometer else { return device }
        return SIMD3(
            UnitConversion.gravities(fromMetresPerSecondSquared: device.x),
            UnitConversion.gravities(fromMetresPerSecondSquared: device.y),
            UnitConversion.gravities(fromMetresPerSecondSquared: device.z))
    }
}
