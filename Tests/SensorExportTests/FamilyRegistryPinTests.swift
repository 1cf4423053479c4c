import Foundation
import SensorExport
import SensorKitModel
import SensorSimulation
import SensorTestKit
import Testing

/// The export's tables and the Python client's layout table are written out by hand beside the
/// family registry (`SensorFamilies`, read through `BatchLayout`); these tests fail on any drift
/// between them: a layout or column added, removed or reordered in the registry and not in the
/// other two, or the other way round.
@Suite struct FamilyRegistryPinTests {
    /// The batch columns the export's value reads (a desktop id spans `DesktopIDCode.words`).
    static func columns(_ value: ExportFamily.Value) -> [Int] {
        switch value {
        case .real(let i), .small(let i), .integer(let i), .big(let i), .flag(let i), .ragged(let i): return [i]
        case .desktopID(let i): return Array(i..<(i + DesktopIDCode.words))
        }
    }

    static func column(_ value: ExportFamily.Value) -> Int { columns(value)[0] }

    @Test func everyLayoutHasOneExportTableTakingEachOfItsColumnsOnce() {
        for layout in BatchLayout.allCases {
            let families = ExportFamily.all.filter { $0.layout == layout }
            #expect(families.count == 1, "\(layout): \(families.count) export tables")
            guard let family = families.first else { continue }
            let taken = family.values.flatMap { Self.columns($0.value) }.sorted()
            #expect(taken == Array(layout.columns.indices), "\(layout): export takes batch columns \(taken) of \(layout.columns)")
        }
        #expect(Set(ExportFamily.all.map(\.table)).count == ExportFamily.all.count, "table names are distinct")
    }

    /// docs/export.md: the photoplethysmogram table has a column per wire column — every optical
    /// channel of the wide PMD frame types, ambient, and the status word as an integer.
    @Test func thePhotoplethysmogramTableHasTheWideFrameTypesColumns() throws {
        let family = try #require(ExportFamily.of(.photoplethysmogram))
        #expect(family.values.map(\.name) == BatchLayout.photoplethysmogram.columns)
        #expect(family.values.map(\.name).contains("ppg19") && family.values.map(\.name).last == "status")
        for value in family.values {
            if case .integer = value.value { #expect(value.name == "status") }
        }
    }

    @Test func theHeartRateTablesRaggedColumnIsTheRRCount() throws {
        // The ragged values' per-sample length is the layout's rrCount column.
        let family = try #require(ExportFamily.of(.heartRate))
        let ragged = try #require(family.values.first { if case .ragged = $0.value { true } else { false } })
        #expect(BatchLayout.heartRate.columns[Self.column(ragged.value)] == "rrCount")
    }

    /// The Python client's `LAYOUTS` (clients/python/sensorkit_client.py) equals the registry's
    /// layouts: wire number, name and columns in wire order.
    @Test(.needs(.tools([(TestEnvironment.python, "python3")])), .timeLimit(.minutes(3)))
    func thePythonClientsLayoutsAreTheRegistrys() throws {
        let client = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("clients/python").path
        let printed = try CommandOutput.run([
            "/usr/bin/timeout", "30", TestEnvironment.python, "-c",
            "import json, sys; sys.path.insert(0, sys.argv[1]); import sensorkit_client as c; "
                + "print(json.dumps({str(k): [v[0], v[1]] for k, v in c.LAYOUTS.items()}))",
            client,
        ])
        #expect(printed.status == 0, "\(printed.output)")
        let python = try JSONSerialization.jsonObject(with: Data(printed.output.utf8)) as? [String: [Any]] ?? [:]
        var registry: [String: [Any]] = [:]
        for layout in BatchLayout.allCases { registry[String(layout.rawValue)] = ["\(layout)", layout.columns] }
        #expect(
            Set(python.keys) == Set(registry.keys),
            "layout numbers: Python \(python.keys.sorted()), registry \(registry.keys.sorted())")
        for (number, entry) in registry {
            let theirs = python[number] ?? []
            #expect(theirs.first as? String == entry[0] as? String, "layout \(number)'s name: \(theirs) vs \(entry)")
            #expect(theirs.last as? [String] == entry[1] as? [String], "layout \(number)'s columns: \(theirs) vs \(entry)")
        }
    }
}
