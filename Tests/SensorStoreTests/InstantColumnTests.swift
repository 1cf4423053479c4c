import SensorKitModel
import Testing

@testable import SensorStore

/// Instant columns (an ECG session's start): appended as boot-clock ns, stored and read as SR
/// ns like the sample times, and the values earlier builds stored as boot ns converted once when
/// the store opens (docs/store.md, "Column kinds").
@Suite struct InstantColumnTests {
    static let oldSchema = SampleSchema([
        .integer(name: "microvolts", scale: 1, offset: 0, unit: "µV"),
        .integer(name: "sessionStart", scale: 1, offset: 0, unit: "ns"),
    ])
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

    /// A store as the builds before left it — schema 4, an ECG stream whose `sessionStart` is an
    /// integer column of boot ns — opens converted: SR ns, and the column an instant, so the
    /// daemon's new registration of the same stream finds it.
    @Test func oldECGSessionStartsAreConvertedWhenTheStoreOpens() throws {
        let fixture = try StoreFixture(StoreTests.noHold)
        let old = try fixture.opened.register(descriptor(Self.oldSchema))
        let other = try fixture.opened.register(
            StreamDescriptor(sensor: .accelerometer, device: "host", source: ["source": .string("acc")], schema: Self.oldSchema))
        let (start, time) = (fixture.boottime - 5_000_000_000, fixture.boottime)
        let batch = SampleBatch(
            boot: fixture.clock.bootID, sensorTimes: [time], receiveTimes: [time], columns: [.integers([7]), .integers([start])])
        fixture.opened.append(batch, to: old)
        fixture.opened.append(batch, to: other)
        try fixture.opened.flush()
        try fixture.opened.close()
        do {
            let db = try SQLiteDatabase(path: fixture.configuration.databasePath)
            try db.execute("UPDATE schema_version SET version = 4")
        }

        try fixture.reopen()
        #expect(try fixture.fetch(.electrocardiogram).map(\.values) == [[.integer(7), .integer(fixture.sr(start))]])
        #expect(try fixture.opened.register(descriptor(Self.schema)) == old)
        #expect(fixture.opened.descriptor(of: old)?.schema == Self.schema)
        // Only ECG's session start is an instant: another sensor's "ns" column is left alone.
        #expect(try fixture.fetch(.accelerometer).map(\.values) == [[.integer(7), .integer(start)]])
        let db = try SQLiteDatabase(path: fixture.configuration.databasePath)
        #expect(try db.scalar("SELECT version FROM schema_version") == CatalogSchema.currentVersion)
    }
}
