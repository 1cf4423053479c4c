/// The rotation that turns a chip's axes into the device's axes (X right, Y up the screen, Z out of
/// the screen), as sysfs `[in_[accel_|anglvel_]]mount_matrix` and udev/hwdb `ACCEL_MOUNT_MATRIX`
/// write it: `"x1, y1, z1; x2, y2, z2; x3, y3, z3"`, rows separated by `;` (sysfs-bus-iio,
/// systemd hwdb.d/60-sensor.hwdb; docs/iio.md §12.4). Applied as `device[i] = row_i · chip`, the way
/// iio-sensor-proxy does, with no sign change afterwards (docs/design-notes/0002-axes.md). Pure.
public struct MountMatrix: Hashable, Sendable, CustomStringConvertible {
    /// Row-major: `rows[i]` produces device axis i.
    public let rows: [SIMD3<Double>]

    public static let identity = MountMatrix(validRows: [SIMD3(1, 0, 0), SIMD3(0, 1, 0), SIMD3(0, 0, 1)])

    private init(validRows: [SIMD3<Double>]) { rows = validRows }

    /// A matrix from three rows; nil when a row is all zeros (it would erase an axis; such
    /// matrices are rejected, as iio-sensor-proxy rejects them).
    public init?(rows: [SIMD3<Double>]) {
        guard rows.count == 3, !rows.contains(where: { $0 == .zero }) else { return nil }
        self.rows = rows
    }

    /// Parses the sysfs/udev text. Numbers are locale-independent decimals (`SysfsNumber`).
    public init(parsing text: some StringProtocol) throws(MountMatrixError) {
        let rowTexts = SysfsNumber.trim(text).split(separator: ";", omittingEmptySubsequences: false)
        guard rowTexts.count == 3 else {
            throw MountMatrixError(text: String(text), reason: "expected three rows separated by ';'")
        }
        var rows: [SIMD3<Double>] = []
        for rowText in rowTexts {
            let cells = rowText.split(separator: ",", omittingEmptySubsequences: false)
            guard cells.count == 3 else { throw MountMatrixError(text: String(text), reason: "expected three values per row") }
            var row = SIMD3<Double>()
            for (column, cell) in cells.enumerated() {
                do throws(SysfsNumberError) {
                    row[column] = try SysfsNumber.decimal(cell)
                } catch {
                    throw MountMatrixError(text: String(text), reason: "'\(cell)' is not a decimal number")
                }
            }
            rows.append(row)
        }
        guard let matrix = MountMatrix(rows: rows) else {
            throw MountMatrixError(text: String(text), reason: "a row is all zeros")
        }
        self = matrix
    }

    /// Chip axes → device axes.
    public func apply(_ chip: SIMD3<Double>) -> SIMD3<Double> {
        SIMD3((rows[0] * chip).sum(), (rows[1] * chip).sum(), (rows[2] * chip).sum())
    }

    public var description: String {
        rows.map { row in [row.x, row.y, row.z].map(Self.format).joined(separator: ", ") }.joined(separator: "; ")
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

/// Mount-matrix text that cannot be used.
public struct MountMatrixError: Error, Hashable, Sendable, CustomStringConvertible {
    public let text: String
    public let reason: String
    public init(text: String, reason: String) {
        self.text = text
        self.reason = reason
    }
    public var description: String { "mount matrix '\(text.debugDescriptionTrimmed)': \(reason)" }
}
