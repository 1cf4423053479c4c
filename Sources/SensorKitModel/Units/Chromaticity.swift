/// CIE 1931 xy chromaticity estimated from a colour light sensor's red, green and blue counts, for
/// `SRAmbientLightSample.chromaticity` ("only valid on supporting devices; if not supported, the
/// values will be zero").
///
/// The counts are treated as linear sRGB and taken to CIE XYZ with the sRGB (D65) matrix of
/// IEC 61966-2-1:1999 (also in ITU-R BT.709 primaries + D65 white):
///
///     X = 0.4124 R + 0.3576 G + 0.1805 B
///     Y = 0.2126 R + 0.7152 G + 0.0722 B
///     Z = 0.0193 R + 0.1192 G + 0.9505 B          x = X/(X+Y+Z), y = Y/(X+Y+Z)
///
/// so equal counts give D65 white (0.3127, 0.3290) and a pure channel gives its sRGB primary.
/// This is an uncalibrated estimate: a chip's filters are not the sRGB primaries, and the
/// per-chip matrices of vendors' application notes (e.g. ams DN40, which also subtracts an IR
/// estimate from the clear channel) are not applied. A common gain (`in_intensity_scale` on
/// APDS9960) cancels out. Pure.
public struct Chromaticity: Hashable, Sendable {
    public var x: Double
    public var y: Double

    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }

    /// What SensorKit reports when colour is not known.
    public static let zero = Chromaticity(x: 0, y: 0)

    /// The estimate from red, green and blue values of one reading; `.zero` when it cannot be
    /// derived (a negative count, all counts zero, or a non-finite value).
    public static func estimate(red: Double, green: Double, blue: Double) -> Chromaticity {
        guard red >= 0, green >= 0, blue >= 0, red.isFinite, green.isFinite, blue.isFinite else { return .zero }
        let bigX = 0.4124 * red + 0.3576 * green + 0.1805 * blue
        let bigY = 0.2126 * red + 0.7152 * green + 0.0722 * blue
        let bigZ = 0.0193 * red + 0.1192 * green + 0.9505 * blue
        let sum = bigX + bigY + bigZ
        guard sum > 0 else { return .zero }
        return Chromaticity(x: bigX / sum, y: bigY / sum)
    }
}
