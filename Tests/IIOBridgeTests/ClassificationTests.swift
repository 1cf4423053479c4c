import Testing

@testable import IIOBridge

@Suite struct ClassificationTests {
    static func channel(_ prefix: String, raw: Bool = true, input: Bool = false, scan index: Int? = nil) -> IIOChannel {
        IIOChannel(
            id: IIOChannelID(prefix: prefix)!, hasRaw: raw, hasInput: input,
            scanElement: index.map { IIOScanElement(index: $0, type: try! ScanType(parsing: "le:s16/16>>0"), isEnabled: false) })
    }

    static func device(_ channels: [IIOChannel], buffer: Bool = true) -> IIODeviceDescription {
        IIODeviceDescription(
            deviceName: "iio:device0", name: "test", channels: channels, bufferDirectory: buffer ? "buffer" : nil)
    }

    @Test func twoAxesAreNotAnAccelerometer() {
        let device = Self.device([Self.channel("in_accel_x"), Self.channel("in_accel_y")])
        #expect(IIOSensorFunction.functions(of: device).isEmpty)
    }

    @Test func linearAccelerationIsNotTheAccelerometer() {
        let device = Self.device(["x", "y", "z"].map { Self.channel("in_accel_linear_\($0)") })
        #expect(IIOSensorFunction.functions(of: device).isEmpty)
    }

    @Test func bufferedNeedsABufferDirectory() {
        let channels = ["x", "y", "z"].enumerated().map { Self.channel("in_anglvel_\($0.element)", scan: $0.offset) }
        #expect(IIOSensorFunction.functions(of: Self.device(channels)).map(\.capture) == [.buffered])
        #expect(IIOSensorFunction.functions(of: Self.device(channels, buffer: false)).map(\.capture) == [.polled])
    }

    @Test func bufferedFunctionDropsOptionalChannelsThatAreNotBuffered() {
        let device = Self.device([Self.channel("in_pressure", scan: 0), Self.channel("in_temp")])
        let function = IIOSensorFunction.function(kind: .pressure, of: device)
        #expect(
            function
                == IIOSensorFunction(kind: .pressure, capture: .buffered, channels: [.pressure: IIOChannelID(type: "pressure")]))
        let polled = Self.device([Self.channel("in_pressure"), Self.channel("in_temp_ambient")])
        #expect(IIOSensorFunction.function(kind: .pressure, of: polled)?.channels[.temperature]?.prefix == "in_temp_ambient")
    }

    @Test func temperatureAloneIsNotAPressureSensor() {
        #expect(IIOSensorFunction.functions(of: Self.device([Self.channel("in_temp")])).isEmpty)
    }

    @Test func lightPrefersPlainIlluminanceAndNeverIR() {
        let both = Self.device([
            Self.channel("in_illuminance_ir"), Self.channel("in_illuminance1"), Self.channel("in_illuminance0"),
        ])
        #expect(IIOSensorFunction.function(kind: .ambientLight, of: both)?.channels[.illuminance]?.prefix == "in_illuminance0")
        let clear = Self.device([Self.channel("in_illuminance_ir"), Self.channel("in_illuminance_clear")])
        #expect(
            IIOSensorFunction.function(kind: .ambientLight, of: clear)?.channels[.illuminance]?.prefix == "in_illuminance_clear")
        let irOnly = Self.device([Self.channel("in_illuminance_ir"), Self.channel("in_intensity_both")])
        #expect(IIOSensorFunction.function(kind: .ambientLight, of: irOnly) == nil)
    }

    @Test func stepCounterNeedsInputAndIsAlwaysPolled() {
        let buffered = Self.device([Self.channel("in_steps", raw: false, input: true, scan: 0)])
        #expect(IIOSensorFunction.function(kind: .stepCounter, of: buffered)?.capture == .polled)
        #expect(IIOSensorFunction.function(kind: .stepCounter, of: Self.device([Self.channel("in_steps")])) == nil)
    }

    @Test func eachKindFeedsItsSensor() {
        #expect(
            IIOSensorFunction.Kind.allCases.map(\.sensor) == [
                .accelerometer, .rotationRate, .ambientLightSensor, .ambientPressure, .pedometerData,
            ])
    }
}
