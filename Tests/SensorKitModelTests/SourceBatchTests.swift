import Testing

@testable import SensorKitModel

/// Batches filled by a family's keys land in the order of the descriptor built from the same keys.
@Suite struct SourceBatchTests {
    @Test func aDescriptorsColumnsFollowTheFamilysDeclarationOrder() {
        let schema = SourceSchema<LightFamily.Stored>([.clear: .count("counts"), .illuminance: .count("lux")])
        let descriptor = SourceDescriptor(sensor: .ambientLightSensor, device: "host", source: "s", schema: schema, details: [:])
        #expect(descriptor.columns.map(\.name) == ["illuminance", "clear"])
        var values = BatchValues<LightFamily.Stored>()
        values[.clear] = [9]
        values[.illuminance] = [3]
        let batch = SourceBatch(boot: BootID("b"), sensorTimes: [1], receiveTimes: [1], values: values, for: descriptor)
        #expect(batch.columns == [[3], [9]])
    }

    @Test func aFloatColumnCarriesItsBitPattern() {
        let schema = SourceSchema<PressureFamily.Stored>(every: { _ in .float(unit: "kPa") })
        let descriptor = SourceDescriptor(sensor: .ambientPressure, device: "host", source: "s", schema: schema, details: [:])
        var values = BatchValues<PressureFamily.Stored>()
        values.set(.pressure, floats: [-0.0])
        values.set(.temperature, floats: [21.5])
        let batch = SourceBatch(boot: BootID("b"), sensorTimes: [1], receiveTimes: [1], values: values, for: descriptor)
        #expect(batch.columns == [[Int64(bitPattern: (-0.0).bitPattern)], [Int64(bitPattern: 21.5.bitPattern)]])
    }
}
