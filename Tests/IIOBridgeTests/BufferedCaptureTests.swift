import Foundation
import Testing

@testable import IIOBridge

@Suite struct BufferedCaptureTests {
    let tree = FakeSysfsTree()
    static let accel = ["x", "y", "z"].map { IIOChannelID(type: "accel", modifier: $0) }

    func bmi160() throws -> (IIOSysfsDevice, IIODeviceDescription) {
        let device = tree.addDevice(0, ChipFixtures.bmi160)
        return (device, try device.describe())
    }

    static func plan(trigger: String? = nil) -> BufferedCapture.Plan {
        BufferedCapture.Plan(
            channels: accel, samplingFrequencies: [.init(attribute: "in_accel_sampling_frequency", hertz: 100)],
            trigger: trigger, length: 512, watermark: 8)
    }

    @Test func enableSequenceFollowsTheDocumentedOrder() throws {
        let (_, description) = try bmi160()
        let writes = try BufferedCapture.enableWrites(Self.plan(trigger: "bmi160-trigger"), device: description)
        #expect(
            writes.map { "\($0.attribute)=\($0.value)" } == [
                "buffer/enable=0",
                "current_timestamp_clock=boottime",
                "in_accel_sampling_frequency=100",
                "scan_elements/in_accel_x_en=1", "scan_elements/in_accel_y_en=1", "scan_elements/in_accel_z_en=1",
                "scan_elements/in_anglvel_x_en=0", "scan_elements/in_anglvel_y_en=0", "scan_elements/in_anglvel_z_en=0",
                "scan_elements/in_timestamp_en=1",
                "trigger/current_trigger=bmi160-trigger",
                "buffer/length=512", "buffer/watermark=8",
                "buffer/enable=1",
            ])
        #expect(
            writes.filter { !$0.required }.map(\.attribute) == ["current_timestamp_clock", "buffer/length", "buffer/watermark"])
    }

    @Test func disableSequenceTurnsTheBufferOffFirst() throws {
        let (_, description) = try bmi160()
        let writes = BufferedCapture.disableWrites(Self.plan(trigger: "bmi160-trigger"), device: description)
        #expect(writes.first.map { "\($0.attribute)=\($0.value)" } == "buffer/enable=0")
        #expect(writes[1].attribute == "trigger/current_trigger" && writes[1].value == "")
        #expect(writes.dropFirst(2).allSatisfy { $0.attribute.hasSuffix("_en") && $0.value == "0" })
        #expect(writes.count == 2 + 7)
        #expect(
            BufferedCapture.disableWrites(Self.plan(), device: description).contains { $0.attribute.hasPrefix("trigger") }
                == false)
    }

    @Test func enableAndDisableOnSysfs() throws {
        let (device, description) = try bmi160()
        let (layout, skipped) = try BufferedCapture.enable(Self.plan(), on: device, device: description)
        #expect(skipped.isEmpty)
        #expect(layout.scanBytes == 16)
        let read = { (name: String) in try device.directory.read(name) }
        #expect(try read("buffer/enable") == "1")
        #expect(try read("buffer/length") == "512")
        #expect(try read("current_timestamp_clock") == "boottime")
        #expect(try read("scan_elements/in_accel_y_en") == "1")
        #expect(try read("scan_elements/in_anglvel_y_en") == "0")
        #expect(try read("scan_elements/in_timestamp_en") == "1")
        #expect(BufferedCapture.disable(Self.plan(), on: device, device: description).isEmpty)
        #expect(try read("buffer/enable") == "0")
        #expect(try read("scan_elements/in_accel_y_en") == "0")
        #expect(try read("scan_elements/in_timestamp_en") == "0")
    }

    @Test func failedRequiredWriteThrowsAndLeavesTheBufferOff() throws {
        let (device, description) = try bmi160()
        tree.remove(0, "scan_elements/in_accel_z_en")
        #expect {
            try BufferedCapture.enable(Self.plan(), on: device, device: description)
        } throws: { error in
            guard case let .write(failure)? = error as? BufferedCaptureError else { return false }
            return failure.attribute == "scan_elements/in_accel_z_en"
        }
        #expect(try device.directory.read("buffer/enable") == "0")
        #expect(try device.directory.read("scan_elements/in_accel_x_en") == "0")
    }

    @Test func aMissingLengthOrWatermarkKeepsTheKernelsDefaultWithOneLineEach() throws {
        let (device, description) = try bmi160()
        tree.remove(0, "buffer/length")
        tree.remove(0, "buffer/watermark")
        let (_, skipped) = try BufferedCapture.enable(Self.plan(), on: device, device: description)
        #expect(try device.directory.read("buffer/enable") == "1")
        #expect(
            skipped.map(BufferedCapture.explain) == [
                "iio:device0: buffer/length: missing; the buffer keeps the kernel's default length",
                "iio:device0: buffer/watermark: missing; the buffer keeps the kernel's default watermark",
            ])
    }

    @Test func unwritableClockIsSkippedNotFatal() throws {
        let (device, description) = try bmi160()
        tree.remove(0, "current_timestamp_clock")
        try FileManager.default.createDirectory(
            atPath: tree.root + "/iio:device0/current_timestamp_clock", withIntermediateDirectories: false)
        let (_, skipped) = try BufferedCapture.enable(Self.plan(), on: device, device: description)
        #expect(skipped.map(\.attribute) == ["current_timestamp_clock"])
        #expect(try device.directory.read("buffer/enable") == "1")
    }

    @Test func channelsWithoutScanElementsCannotBeBuffered() throws {
        let device = tree.addDevice(1, ChipFixtures.apds9960)
        let description = try device.describe()
        let plan = BufferedCapture.Plan(channels: [IIOChannelID(type: "intensity", modifier: "red")])
        #expect(throws: ScanLayoutError.notBuffered("in_intensity_red")) {
            try BufferedCapture.enableWrites(plan, device: description)
        }
    }
}
