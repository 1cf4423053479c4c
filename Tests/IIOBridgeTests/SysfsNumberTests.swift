import SensorKitModel
import Testing

@testable import IIOBridge

@Suite struct SysfsNumberTests {
    @Test(arguments: [
        ("0.009576806\n", 0.009576806), ("0.000598", 0.000598), ("-0.5", -0.5), ("+2", 2.0), ("100.000000\n", 100),
        ("1e-3", 0.001), ("  12.5  ", 12.5), ("1234567", 1_234_567), ("0", 0), ("-0.000001", -0.000001),
    ])
    func parsesKernelDecimals(text: String, expected: Double) throws {
        #expect(try SysfsNumber.decimal(text) == expected)
    }

    /// A French-looking value is rejected, never read as 0 or 5 (iio-sensor-proxy's fr_FR bug).
    @Test(arguments: [
        "0,5", "0,009576806", "", "\n", "nan", "inf", "-inf", "0x10", "1.", ".5", "1.2.3", "1e", "1e+",
        "12 13", "abc", "1_000", "٣", "1.5kPa", "--1",
    ])
    func rejectsEverythingElse(text: String) {
        #expect(throws: SysfsNumberError.self) { try SysfsNumber.decimal(text) }
    }

    @Test func integers() throws {
        #expect(try SysfsNumber.integer("-16392\n") == -16392)
        #expect(try SysfsNumber.integer("+7") == 7)
        #expect(try SysfsNumber.integer("9223372036854775807") == Int64.max)
        for garbage in ["", "1.0", "0,5", "9223372036854775808", "12a", "- 1", "0x1F"] {
            #expect(throws: SysfsNumberError.self, "\(garbage)") { try SysfsNumber.integer(garbage) }
        }
    }

    @Test func lists() throws {
        #expect(try SysfsNumber.decimals("12.500 26.000 52.000\n") == [12.5, 26, 52])
        #expect(throws: SysfsNumberError.self) { try SysfsNumber.decimals("12,5 26") }
        #expect(throws: SysfsNumberError.self) { try SysfsNumber.decimals(" \n") }
    }

    @Test func errorNamesTheTextOnOneLine() {
        let error = SysfsNumberError(text: "0,5\n", expected: "a decimal number")
        #expect(error.description == "'0,5\\u{a}' is not a decimal number")
    }

    @Test func samplingFrequencyChoices() throws {
        let list = try SamplingFrequencyChoices(parsing: "0.781250 1.562500 25.000000 100.000000 1600.000000\n")
        #expect(list == .list([0.78125, 1.5625, 25, 100, 1600]))
        #expect(list.lowest(atLeast: 10) == 25)
        #expect(list.lowest(atLeast: 5000) == 1600)
        let range = try SamplingFrequencyChoices(parsing: "[1 0.5 10]")
        #expect(range == .range(minimum: 1, step: 0.5, maximum: 10))
        #expect(range.lowest(atLeast: 2.2) == 2.5)
        #expect(range.lowest(atLeast: 0) == 1)
        #expect(range.lowest(atLeast: 11) == 10)
        #expect(throws: SysfsNumberError.self) { try SamplingFrequencyChoices(parsing: "[1 2]") }
        #expect(throws: SysfsNumberError.self) { try SamplingFrequencyChoices(parsing: "[1 0.5 10") }
        #expect(throws: SysfsNumberError.self) { try SamplingFrequencyChoices(parsing: "12,5 25") }
    }
}
