import Testing

@testable import IIOBridge

@Suite struct IIOChannelIDTests {
    @Test(arguments: [
        ("in_accel_x", "accel", nil as Int?, "x" as String?),
        ("in_anglvel_z", "anglvel", nil, "z"),
        ("in_illuminance", "illuminance", nil, nil),
        ("in_illuminance0", "illuminance", 0, nil),
        ("in_intensity_red", "intensity", nil, "red"),
        ("in_intensity1_clear", "intensity", 1, "clear"),
        ("in_temp_ambient", "temp", nil, "ambient"),
        ("in_pressure0", "pressure", 0, nil),
        ("in_steps", "steps", nil, nil),
        ("in_humidityrelative", "humidityrelative", nil, nil),
        ("in_accel_linear_x", "accel", nil, "linear_x"),
        ("in_rot_from_north_magnetic_tilt_comp", "rot", nil, "from_north_magnetic_tilt_comp"),
        ("in_angl", "angl", nil, nil),
        ("in_phase0", "phase", 0, nil),
        ("in_timestamp", "timestamp", nil, nil),
    ])
    func parsesAttributePrefixes(prefix: String, type: String, index: Int?, modifier: String?) throws {
        let id = try #require(IIOChannelID(prefix: prefix))
        #expect(id.type == type)
        #expect(id.index == index)
        #expect(id.modifier == modifier)
        #expect(id.direction == .input)
        #expect(IIOChannelID(type: type, index: index, modifier: modifier).prefix == prefix)
    }

    @Test(arguments: [
        "accel_x", "in_", "in_frobnicator_x", "in_voltage0-voltage1", "in_accel_", "in_accelx", "sampling_frequency",
    ])
    func ignoresWhatItDoesNotModel(prefix: String) {
        #expect(IIOChannelID(prefix: prefix) == nil)
    }

    @Test func lookupOrderIsSeparateTypeDirectionAll() throws {
        let id = try #require(IIOChannelID(prefix: "in_accel_x"))
        #expect(id.attributeNames(info: "scale") == ["in_accel_x_scale", "in_accel_scale", "in_scale", "scale"])
        let indexed = try #require(IIOChannelID(prefix: "in_illuminance0"))
        #expect(
            indexed.attributeNames(info: "offset") == ["in_illuminance0_offset", "in_illuminance_offset", "in_offset", "offset"])
    }
}
