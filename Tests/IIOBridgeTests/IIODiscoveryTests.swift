import Dispatch
import Foundation
import SensorKitModel
import SensorTestKit
import Synchronization
import Testing

@testable import IIOBridge

/// A registry that remembers what discovery did, in order.
final class RegistryLog: SourceRegistry, Sendable {
    private let state = Mutex<(sources: [any SensorSource], actions: [String])>(([], []))

    func add(_ source: any SensorSource) {
        state.withLock {
            $0.sources.append(source)
            $0.actions.append("add \(source.descriptor.sensor.rawValue.split(separator: ".").last!) \(source.descriptor.source)")
        }
    }

    func remove(source: String) {
        state.withLock { state in
            for removed in state.sources where removed.descriptor.source == source { removed.close() }
            state.sources.removeAll { $0.descriptor.source == source }
            state.actions.append("remove \(source)")
        }
    }

    var sources: [any SensorSource] { state.withLock { $0.sources } }
    var actions: [String] { state.withLock { $0.actions } }
}

/// Discovery driven by hand-made udev events over a temporary sysfs tree (the udev monitor path
/// itself is covered by `UdevIIOMonitorTests` and the end-to-end tests under umockdev).
@Suite struct IIODiscoveryTests {
    let tree = FakeSysfsTree()
    let registry = RegistryLog()
    let log = LogLines()

    func discovery(ignored: [String] = []) -> IIODiscovery {
        IIODiscovery(
            registry: registry, options: .init(ignored: ignored, clock: FakeClock(), log: log.log, triggersRoot: tree.root))
    }

    func event(_ number: Int, _ action: UdevIIODevice.Action?, _ properties: [String: String] = [:]) -> UdevIIODevice {
        UdevIIODevice(
            action: action, syspath: tree.root + "/iio:device\(number)", sysname: "iio:device\(number)",
            devnode: tree.root + "/dev-\(number)", properties: properties)
    }

    func settle(_ discovery: IIODiscovery) { discovery.queue.sync {} }

    @Test func addsOneSourcePerFunctionSharingTheChipsBuffer() throws {
        tree.addDevice(0, ChipFixtures.bmi160)
        tree.addDevice(1, ChipFixtures.bma400)
        tree.addTrigger(0, name: "bmi160-trigger")
        let discovery = discovery()
        discovery.handle([event(0, nil), event(1, nil)])
        settle(discovery)
        let root = tree.root.split(separator: "/").joined(separator: "/")
        #expect(
            registry.actions == [
                "add accelerometer iio:bmi160@/\(root)", "add gyroscope iio:bmi160@/\(root)",
                "add accelerometer iio:bma400@/\(root)", "add data iio:bma400@/\(root)",
            ])
        let buffered = registry.sources.compactMap { $0 as? IIOBufferedSource }
        #expect(buffered.count == 3)
        #expect(buffered[0].capture === buffered[1].capture, "accel and gyro of one chip share one buffer")
        #expect(buffered[0].capture !== buffered[2].capture)
        #expect(buffered[0].capture.plan.plan.trigger == "bmi160-trigger")
        #expect(registry.sources.last is IIOPolledSource)
        #expect(log.all.filter { $0.hasPrefix("<6>iio:device") }.count == 2)
        // Enumeration and an add event for the same syspath are one device.
        discovery.handle([event(0, .add)])
        settle(discovery)
        #expect(registry.actions.count == 4)
        discovery.stop()
    }

    @Test func garbageSkipsOrDegradesWithOneLineEach() throws {
        var badScale = ChipFixtures.bmi160
        badScale["in_accel_scale"] = "0,000598"
        tree.addDevice(0, badScale)
        var missingIndex = ChipFixtures.lsm6dsxAccel
        missingIndex["scan_elements/in_accel_y_index"] = nil
        tree.addDevice(1, missingIndex)
        var duplicateIndex = ChipFixtures.bmi160
        duplicateIndex["scan_elements/in_accel_y_index"] = "7"
        tree.addDevice(2, duplicateIndex)
        tree.addDevice(3, ["name": "ad7124"])  // an ADC: nothing sensorkitd records
        let discovery = discovery()
        discovery.handle((0...3).map { event($0, .add) })
        settle(discovery)
        #expect(
            log.all.filter { $0.contains("iio:device0") } == [
                "<4>iio:device0: in_accel_scale: '0,000598': not a decimal number, skipping device"
            ])
        #expect(
            log.all.filter { $0.contains("iio:device1") && $0.hasPrefix("<4>") } == [
                "<4>iio:device1: scan_elements/in_accel_y_index: missing; not using the buffer of lsm6dsl_accel, polling its sysfs values instead"
            ])
        #expect(log.all.filter { $0.contains("iio:device2") && $0.hasPrefix("<4>") }.count == 1)
        #expect(log.all.contains("<6>iio:device3 (ad7124): no channels sensorkitd records, ignoring"))
        let captures = registry.sources.map { "\($0.descriptor.details["chip"]!) \($0.descriptor.details["capture"]!)" }
        #expect(captures == ["lsm6dsl_accel polled", "bmi160 polled", "bmi160 polled"])
        discovery.stop()
    }

    @Test func ignoredByNameOrDeviceAndRemovedOnRemove() throws {
        tree.addDevice(0, ChipFixtures.bmi160)
        tree.addDevice(1, ChipFixtures.tsl2591)
        tree.addDevice(2, ChipFixtures.acpiALS)
        let discovery = discovery(ignored: ["iio:device1", "acpi-als"])
        discovery.handle((0...2).map { event($0, nil) })
        settle(discovery)
        #expect(registry.sources.map { $0.descriptor.details["chip"]! } == ["bmi160", "bmi160"])
        #expect(log.all.contains("<6>iio:device1: ignored by the configuration ([iio] ignore)"))
        #expect(log.all.contains("<6>iio:device2 (acpi-als): ignored by the configuration ([iio] ignore)"))
        discovery.handle([event(0, .remove)])
        settle(discovery)
        #expect(registry.sources.isEmpty)
        #expect(registry.actions.last?.hasPrefix("remove iio:bmi160@") == true)
        #expect(discovery.chips.isEmpty)
        discovery.stop()
    }

    @Test func aChangeReReadsRateAndScaleAndReRegistersOnlyWhenSomethingChanged() throws {
        tree.addDevice(0, ChipFixtures.bmi160)
        let discovery = discovery()
        discovery.handle([event(0, .add, ["ACCEL_MOUNT_MATRIX": "0, 1, 0; -1, 0, 0; 0, 0, 1"])])
        settle(discovery)
        let first = registry.sources.compactMap { $0 as? IIOBufferedSource }
        discovery.handle([event(0, .change, ["ACCEL_MOUNT_MATRIX": "0, 1, 0; -1, 0, 0; 0, 0, 1", "SEQNUM": "77"])])
        settle(discovery)
        #expect(registry.actions.count == 2, "nothing that matters changed: no churn")

        // A range switch: the scale doubles. The capture plan is the same, so the buffer is reused.
        tree.set(0, "in_accel_scale", "0.001197")
        discovery.handle([event(0, .change, ["ACCEL_MOUNT_MATRIX": "0, 1, 0; -1, 0, 0; 0, 0, 1"])])
        settle(discovery)
        #expect(
            log.all.last
                == "<5>iio:device0 (bmi160) changed: accelerometer x scale 0.000598 → 0.001197, accelerometer y scale 0.000598 → 0.001197, accelerometer z scale 0.000598 → 0.001197; its streams are registered anew"
        )
        #expect(
            Array(registry.actions.suffix(3).map { $0.split(separator: " ").prefix(2).joined(separator: " ") })
                == [
                    "remove iio:bmi160@/\(tree.root.split(separator: "/").joined(separator: "/"))", "add accelerometer",
                    "add gyroscope",
                ])
        let second = registry.sources.compactMap { $0 as? IIOBufferedSource }
        #expect(second[0].descriptor.columns[0].kind == .count(scale: 0.001197, offset: 0, unit: "m/s^2"))
        #expect(second[0].capture === first[0].capture)

        // A rate change changes the plan (watermark): a new capture on the same control queue.
        tree.set(0, "in_accel_sampling_frequency", "400.000000")
        discovery.handle([event(0, .change, ["ACCEL_MOUNT_MATRIX": "0, 1, 0; -1, 0, 0; 0, 0, 1"])])
        settle(discovery)
        let third = registry.sources.compactMap { $0 as? IIOBufferedSource }
        #expect(third[0].descriptor.details["samplingFrequency"] == "400 Hz")
        #expect(third[0].period == 2_500_000)
        let (old, new) = (
            try #require(second[0].capture as? IIODeviceCapture), try #require(third[0].capture as? IIODeviceCapture)
        )
        #expect(new !== old && new.controlQueue === old.controlQueue)
        #expect(log.all.last?.contains("accelerometer samplingFrequency 100 Hz → 400 Hz") == true)
        discovery.stop()
    }

    /// A refused buffer is polled, and a `change` uevent (an administrator selected a trigger)
    /// tries the buffer again.
    @Test func aRefusedBufferIsPolledAndTriedAgainOnAChange() throws {
        tree.addDevice(0, ChipFixtures.bmi160)
        tree.addTrigger(0, name: "bmi160-trigger")
        // The kernel refuses `buffer/enable` (no trigger it can use): here, a write to a folder.
        let enable = tree.root + "/iio:device0/buffer/enable"
        try FileManager.default.removeItem(atPath: enable)
        try FileManager.default.createDirectory(atPath: enable, withIntermediateDirectories: false)
        let discovery = discovery()
        discovery.handle([event(0, .add)])
        settle(discovery)
        let buffered = try #require(registry.sources.first as? IIOBufferedSource)
        buffered.setRecording(true) { _ in }
        (buffered.capture as? IIODeviceCapture)?.settle()
        settle(discovery)
        #expect(registry.sources.allSatisfy { $0 is IIOPolledSource }, "\(registry.actions)")

        try FileManager.default.removeItem(atPath: enable)
        #expect(FileManager.default.createFile(atPath: enable, contents: Data("0\n".utf8)))
        discovery.handle([event(0, .change)])
        settle(discovery)
        #expect(log.all.contains("<5>iio:device0 (bmi160): change uevent; trying its buffer again"), "\(log.all)")
        #expect(registry.sources.count == 2 && registry.sources.allSatisfy { $0 is IIOBufferedSource }, "\(registry.actions)")
        discovery.stop()
    }
}
