/// Accelerometer and rotation rate (docs/sensorkit-mapping.md): three chip axes stored as counts
/// with their scale, mapped by the mount matrix into the device frame (docs/design-notes/0002-axes.md),
/// ÷ g for acceleration. The mapping is linear, so it is the fast path (`ColumnMapping`) for the
/// daemon and for a client given stored chunks.
public enum MotionFamily: SensorFamily {
    /// The chip's axes, as stored.
    public enum Stored: String, FamilyColumn {
        case x, y, z
    }

    /// Device axes in g (accelerometer) or rad/s (rotation rate).
    public enum Wire: String, FamilyColumn {
        case x, y, z
    }

    public static let layout = BatchLayout.motion
    public static let sensors: [SRSensor] = [.accelerometer, .rotationRate]
    public static let isLinear = true

    /// The stored unit of the axes of `sensor` (IIO's: m/s² for acceleration, rad/s for rotation).
    public static func storedUnit(_ sensor: SRSensor) -> String {
        sensor == .accelerometer ? "m/s^2" : "rad/s"
    }

    /// The stream's source detail holding its mount matrix (`MountMatrix.description`).
    public static let mountMatrixDetail = "mountMatrix"

    /// Device axis i = `(r.x·x + r.y·y) + r.z·z` over the chip axes, ÷ g for the accelerometer:
    /// the same operations and order as `MountMatrix.apply`. A stream recorded without a matrix
    /// detail is mapped with the identity; one whose stored matrix does not parse is refused
    /// (`MissingStoredColumn` naming the detail): the identity would silently turn its axes.
    public static func mapping(_ stream: StoredStream<Stored>) throws(MissingStoredColumn) -> StoredMapping<Stored, Wire> {
        let axes = [try stream.require(.x), try stream.require(.y), try stream.require(.z)]
        var matrix = MountMatrix.identity
        if let text = stream.details[mountMatrixDetail] {
            do throws(MountMatrixError) {
                matrix = try MountMatrix(parsing: text)
            } catch {
                throw MissingStoredColumn(column: mountMatrixDetail, problem: error.description)
            }
        }
        // Accelerometers are m/s² in IIO and g in CoreMotion; gyroscopes are rad/s in both.
        let divisor = stream.sensor == .accelerometer ? UnitConversion.standardGravity : 1
        let outputs = matrix.rows.map { row in
            ColumnMapping.Output(
                terms: [
                    ColumnMapping.Term(source: axes[0], coefficient: row.x),
                    ColumnMapping.Term(source: axes[1], coefficient: row.y),
                    ColumnMapping.Term(source: axes[2], coefficient: row.z),
                ],
                divisor: divisor)
        }
        return .linear(ColumnMapping(sources: stream.sources, outputs: outputs))
    }

    public static func results<Results: FetchResultBuilder>(_ batch: FamilyBatch<Wire>, into results: inout Results) {
        let (t, dates) = (batch.times, batch.dates)
        let (x, y, z) = (batch[.x], batch[.y], batch[.z])
        if batch.sensor == .rotationRate {
            results.batch(
                batch.indices.map {
                    CMRecordedRotationRateData(
                        rotationRate: CMRotationRate(x: x[$0], y: y[$0], z: z[$0]),
                        startDate: dates.date(t[$0]), timestamp: dates.uptime(t[$0]))
                })
        } else {
            let batchID = UInt64(bitPattern: t[0])
            results.batch(
                batch.indices.map {
                    CMRecordedAccelerometerData(
                        identifier: batchID, acceleration: CMAcceleration(x: x[$0], y: y[$0], z: z[$0]),
                        startDate: dates.date(t[$0]), timestamp: dates.uptime(t[$0]))
                })
        }
    }
}
