import Foundation
import SensorKitModel
import Testing

@testable import IIOBridge

@Suite struct MountMatrixTests {
    @Test func parsesSysfsAndHwdbText() throws {
        #expect(try MountMatrix(parsing: "1, 0, 0; 0, 1, 0; 0, 0, 1\n") == .identity)
        let hwdb = try MountMatrix(parsing: "0, -1, 0; 1, 0, 0; 0, 0, 1")
        #expect(hwdb.rows == [SIMD3(0, -1, 0), SIMD3(1, 0, 0), SIMD3(0, 0, 1)])
        let tight = try MountMatrix(parsing: "-1,0,0;0,-1,0;0,0,-1")
        #expect(tight.rows == [SIMD3(-1, 0, 0), SIMD3(0, -1, 0), SIMD3(0, 0, -1)])
        let fractional = try MountMatrix(parsing: "0.7071, 0.7071, 0; -0.7071, 0.7071, 0; 0, 0, 1")
        #expect(fractional.rows[1] == SIMD3(-0.7071, 0.7071, 0))
        #expect(hwdb.description == "0, -1, 0; 1, 0, 0; 0, 0, 1")
    }

    @Test(arguments: [
        ("1, 0, 0; 0, 1, 0", "three rows"),
        ("1, 0, 0; 0, 1, 0; 0, 0, 1; 0, 0, 0", "three rows"),
        ("1, 0; 0, 1, 0; 0, 0, 1", "three values"),
        ("1, 0, 0; 0, 0, 0; 0, 0, 1", "all zeros"),
        ("1, 0, 0; 0, 1, 0; 0, 0, x", "not a decimal"),
        ("1, 0, 0; 0, 0,5, 0; 0, 0, 1", "three values"),
        ("", "three rows"),
    ])
    func rejectsGarbage(text: String, reason: String) {
        #expect {
            try MountMatrix(parsing: text)
        } throws: { error in
            (error as? MountMatrixError)?.reason.contains(reason) ?? false
        }
    }

    @Test func appliesRowByRow() throws {
        // device[i] = row_i · chip
        let matrix = try MountMatrix(parsing: "0, -1, 0; 1, 0, 0; 0, 0, 1")
        #expect(matrix.apply(SIMD3(1, 2, 3)) == SIMD3(-2, 1, 3))
        #expect(MountMatrix.identity.apply(SIMD3(1, 2, 3)) == SIMD3(1, 2, 3))
        #expect(MountMatrix(rows: [SIMD3(1, 0, 0), .zero, SIMD3(0, 0, 1)]) == nil)
    }
}

/// docs/protocol.md §3.5 states the `mountMatrix` text of a motion source's details; each example
/// row there is what the daemon writes for that matrix, and reads back to the same matrix.
@Suite struct MountMatrixDocumentTests {
    @Test func documentedTextIsWhatTheDaemonWrites() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/protocol.md")
        let lines = try String(contentsOf: docs, encoding: .utf8).split(separator: "\n")
        let header = "| matrix as sysfs or hwdb write it | `mountMatrix` |"
        let start = try #require(lines.firstIndex { $0.hasPrefix(header) }, "docs/protocol.md has no mountMatrix table")
        let rows = lines[(start + 2)...].prefix { $0.hasPrefix("|") }.map { line in
            line.split(separator: "|").map { $0.replacingOccurrences(of: "`", with: "").trimmingCharacters(in: .whitespaces) }
        }
        #expect(rows.count >= 3)
        for row in rows {
            let matrix = try MountMatrix(parsing: row[0])
            #expect(matrix.description == row[1], "\(row[0])")
            #expect(try MountMatrix(parsing: row[1]) == matrix)
        }
    }
}
