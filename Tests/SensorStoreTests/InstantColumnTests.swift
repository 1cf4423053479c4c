import SensorKitModel
import Testing

@testable import SensorStore

/// Instant columns (an ECG session's start): appended as boot-clock ns, stored and read as SR
/// ns like the sample times.
@Suite struct InstantColumnTests {
    static let schema = SampleSchema([
        .integer(name: "microvolts", scale: 1, offset: 0, unit: "µV"), .instant(name: "sessionStart"),
    ])

    func descriptor(_ schema: SampleSchema) -> StreamDescriptor {
        StreamDescriptor(sensor: .electrocardiogram, device: "host", source: ["source": .string("ecg")], schema: schema)
    }

    @Test func anInstantIsStoredAsSRTimeLikeTheSampleTimes() throws {
        let fixture = try StoreFixture(StoreTests.noHold)
        let stream = try fixture.opened.register(descriptor(Self.schema))
        let (start, time) = (fixture.boottime - 5_000_000_000, fixture.boottime)
        fixture.opened.append(
            SampleBatch(
                boot: fixture.clock.bootID, sensorTimes: [time, time + 1], receiveTimes: [time, time + 1],
                columns: [.integers([7, 8]), .integers([start, start])]),
            to: stream)
        try fixture.opened.flush()
        #expect(
            try fixture.fetch(.electrocardiogram).map(\.values) == [
                [.integer(7), .integer(fixture.sr(start))], [.integer(8), .integer(fixture.sr(start))],
            ])
        // Sealed and read again after a reopen: the same SR instants, converted once.
        try fixture.reopen()
        #expect(
            try fixture.fetch(.electrocardiogram).map(\.values).map { $0[1] }
                == Array(repeating: .integer(fixture.sr(start)), count: 2))
    }
}
