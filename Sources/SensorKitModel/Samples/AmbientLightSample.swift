import Foundation

/// One ambient-light reading (Apple's `SRAmbientLightSample`), one per fetch result:
/// `result.sample as? SRAmbientLightSample`.
///
/// On Linux: `lux` from IIO `in_illuminance*` only; `chromaticity` derived from
/// `in_intensity_{red,green,blue,clear}` where the chip has them, otherwise zero, exactly as Apple
/// reports it on devices without colour sensing; `placement` from udev properties or the label.
public final class SRAmbientLightSample: NSObject, Sendable {
    /// Where the light sensor sits on the device (Apple's `SRAmbientLightSensorPlacement`,
    /// `NSInteger`, values as in the header).
    public enum SensorPlacement: Int, Sendable, CaseIterable {
        case unknown = 0
        case frontTop = 1
        case frontBottom = 2
        case frontRight = 3
        case frontLeft = 4
        case frontTopRight = 5
        case frontTopLeft = 6
        case frontBottomRight = 7
        case frontBottomLeft = 8
    }

    /// Apple's `SRAmbientLightChromaticity` C struct (`Float32 x, y`). "Only valid on supporting
    /// devices. If not supported, the values will be zero." sensorkitd fills CIE 1931 xy.
    /// Not `Equatable`, like the imported C struct.
    public struct Chromaticity: Sendable {
        public var x: Float32
        public var y: Float32

        public init() { self.init(x: 0, y: 0) }

        public init(x: Float32, y: Float32) {
            self.x = x
            self.y = y
        }
    }

    public let placement: SensorPlacement
    public let chromaticity: Chromaticity
    /// Illuminance, held in lux whatever unit the initialiser was given.
    public let lux: Measurement<UnitIlluminance>

    public init(placement: SensorPlacement, chromaticity: Chromaticity, lux: Measurement<UnitIlluminance>) {
        self.placement = placement
        self.chromaticity = chromaticity
        self.lux = lux.expressed(in: .lux)
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SRAmbientLightSample else { return false }
        return placement == other.placement && chromaticity.x == other.chromaticity.x
            && chromaticity.y == other.chromaticity.y && lux == other.lux
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(placement)
        hasher.combine(chromaticity.x)
        hasher.combine(chromaticity.y)
        hasher.combine(lux.value)
        return hasher.finalize()
    }

    public override var description: String {
        "SRAmbientLightSample(\(lux.value) lx, chromaticity: (\(chromaticity.x), \(chromaticity.y)), "
            + "placement: \(placement))"
    }
}
