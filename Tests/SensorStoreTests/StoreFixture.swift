import Foundation
import SensorKitModel
import SensorTestKit

@testable import SensorStore

/// A store in a fresh temporary folder with a fake clock: time moves only when a test says so.
final class StoreFixture {
    let directory: String
    let clock = FakeClock()
    private(set) var timeline: Timeline
    var configuration: StoreConfiguration
    private(set) var store: SensorStore?

    static let hour: Int64 = 3_600_000_000_000
    static let day: Int64 = 24 * hour

    init(_ adjust: (inout StoreConfiguration) -> Void = { _ in }) throws {
        directory = NSTemporaryDirectory() + "sensorstore-test-" + UUID().uuidString
        var timeline = Timeline.founded(by: clock)
        timeline.adoptCurrentBoot(of: clock)
        self.timeline = timeline
        configuration = StoreConfiguration(directory: directory)
        configuration.durability = .processCrash
        configuration.commitInterval = 3600  // tests commit with flush()
        configuration.purgeInterval = 0
        adjust(&configuration)
        store = try SensorStore(configuration: configuration, clock: clock, timeline: timeline)
    }

    deinit {
        try? store?.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    var opened: SensorStore { store! }

    /// Closes and opens the store again (the same folder, clock and timeline).
    func reopen(onLoss: @escaping @Sendable (StoreLossEvent) -> Void = { _ in }) throws {
        try store?.close()
        store = nil
        store = try SensorStore(configuration: configuration, clock: clock, timeline: timeline, onLoss: onLoss)
    }

    /// SR ns of a boot-clock instant of the current boot.
    func sr(_ boottime: Int64) -> Int64 { timeline.srNanoseconds(of: BootInstant(boot: clock.bootID, nanoseconds: boottime))! }

    /// The boot time now.
    var boottime: Int64 { clock.boottimeNanoseconds() }

    /// Every sample of the sensor as (SR time, receive SR time, values), via the public cursor.
    func fetch(_ sensor: SRSensor = .accelerometer, from: Int64 = .min, to: Int64 = .max, notBefore: Int64 = .min) throws
        -> [StoredRow]
    {
        let cursor = try opened.samples(sensor: sensor, device: "host", from: from, to: to, notBefore: notBefore)
        var rows: [StoredRow] = []
        while let block = try cursor.next() {
            for index in 0..<block.count {
                rows.append(
                    StoredRow(
                        time: block.sensorTime(at: index), receive: block.receiveTime(at: index),
                        values: block.values(at: index)))
            }
        }
        return rows
    }
}

struct StoredRow: Equatable, CustomStringConvertible {
    var time: Int64
    var receive: Int64
    var values: [SampleValue]
    var description: String { "(\(time), \(receive), \(values))" }
}

extension SampleSchema {
    static let threeAxes = SampleSchema([
        .integer(name: "x", scale: 0.000598, offset: 0, unit: "m/s²"),
        .integer(name: "y", scale: 0.000598, offset: 0, unit: "m/s²"),
        .integer(name: "z", scale: 0.000598, offset: 0, unit: "m/s²"),
    ])
}

extension StreamDescriptor {
    static let accelerometer = StreamDescriptor(
        sensor: .accelerometer, device: "host",
        source: [
            "chip": .string("bmi160"), "udev": .string("/devices/iio:device0"), "rate": .integer(100),
            "mount": .array([.integer(1), .integer(0), .integer(0)]),
        ],
        schema: .threeAxes)
}
