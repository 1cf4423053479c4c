import Testing

@testable import IIOBridge

@Suite struct FunctionRateTests {
    /// `sampling_frequency` is the device's number: 1e-300 Hz made a period of 1e309 ns, whose
    /// conversion to Int64 trapped; 1e300 Hz made a period of 0, which the batcher refuses.
    @Test func absurdRatesGiveAPeriodWithinOneNanosecondAndOneDay() {
        #expect(FunctionRate(attribute: "sampling_frequency", hertz: 100).period == 10_000_000)
        #expect(FunctionRate(attribute: "sampling_frequency", hertz: 1e300).period == 1)
        #expect(FunctionRate(attribute: "sampling_frequency", hertz: 1e-300).period == 86_400_000_000_000)
        #expect(FunctionRate(attribute: "sampling_frequency", hertz: 0).period == 86_400_000_000_000)
        #expect(FunctionRate(attribute: nil, hertz: nil).period == nil)
    }

    /// A chip reporting 1e300 Hz: the buffer watermark (100 ms of scans) converted 1e299 to Int
    /// and trapped while the capture was planned, before anything was recorded.
    @Test func anAbsurdSamplingFrequencyPlansABoundedBuffer() throws {
        let tree = FakeSysfsTree()
        var attributes = ChipFixtures.bmi160
        attributes["in_accel_sampling_frequency"] = "1e300"
        attributes["in_anglvel_sampling_frequency"] = "1e300"
        let sysfs = tree.addDevice(0, attributes)
        let udev = UdevIIODevice(syspath: sysfs.directory.path, sysname: "iio:device0", devnode: nil, properties: [:])
        let chip = try IIOChip(udev: udev, description: try sysfs.describe(), triggers: ["bmi160-trigger"])
        let plan = try #require(chip.capturePlan)
        #expect(plan.plan.watermark == 64)
        #expect(plan.rates[.accelerometer]?.period == 1)
    }
}
