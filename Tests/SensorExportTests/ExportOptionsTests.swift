import SensorExport
import Testing

struct ExportOptionsTests {
    @Test func optionsAndDefaults() throws {
        let options = try ExportOptions.parse(
            [
                "--once", "--sensors", "accelerometer, heartRate", "--hold", "2s", "--lag", "0",
                "--commit-rows", "500",
            ], environment: ["SENSORKIT_EXPORT_DATABASE": "dbname=study"])
        #expect(options.once)
        #expect(options.sensors == ["accelerometer", "heartRate"])
        #expect(options.hold == 2_000_000_000)
        #expect(options.lag == 0)
        #expect(options.commitRows == 500)
        #expect(options.database == "dbname=study")
        #expect(
            try ExportOptions.parse(["--database", "dbname=x"], environment: ["SENSORKIT_EXPORT_DATABASE": "dbname=y"]).database
                == "dbname=x")
        #expect(try ExportOptions.parse([], environment: [:]).hold == 86_400_000_000_000)
    }

    @Test func badUsageIsNamed() {
        #expect(throws: ExportOptions.UsageError(description: "--hold: 1.5h is not a duration (250ms, 90s, 5m, 24h, 7d)")) {
            try ExportOptions.parse(["--hold", "1.5h"], environment: [:])
        }
        #expect(throws: ExportOptions.UsageError(description: "--commit-rows: 0 is not a whole number in 1…10000000")) {
            try ExportOptions.parse(["--commit-rows", "0"], environment: [:])
        }
        #expect(throws: ExportOptions.UsageError(description: "unknown option --pasword (see --help)")) {
            try ExportOptions.parse(["--pasword", "x"], environment: [:])
        }
        #expect(throws: ExportOptions.UsageError(description: "--database needs a value")) {
            try ExportOptions.parse(["--database"], environment: [:])
        }
    }

    @Test func aPasswordInTheConnectionStringIsFound() throws {
        #expect(try PostgresConnection.carriesPassword("host=db user=rig password=secret").get())
        #expect(try PostgresConnection.carriesPassword("postgresql://rig:secret@db/study").get())
        #expect(try !PostgresConnection.carriesPassword("host=db user=rig").get())
        #expect(try !PostgresConnection.carriesPassword("").get())
        #expect(throws: PostgresError.self) { try PostgresConnection.carriesPassword("host='unterminated").get() }
    }
}
