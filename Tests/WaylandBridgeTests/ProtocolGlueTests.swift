import Foundation
import SensorSimulation
import SensorTestKit
import Testing

/// The committed C glue (Sources/CWaylandProtocols, Tests/OutputPowerCompositor) is what wayland-scanner makes of the
/// committed XML: the script regenerates it into a scratch folder and every file must match.
@Suite(.needs(.tools([("/usr/bin/wayland-scanner", "libwayland-bin")])))
struct ProtocolGlueTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    @Test func theCommittedGlueIsTheScannersOutputForTheCommittedXML() throws {
        let scratch = NSTemporaryDirectory() + "wayland-glue-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let (status, output) = try CommandOutput.run([Self.root + "/scripts/generate-wayland-protocols.sh", scratch])
        #expect(status == 0, "\(output)")
        let generated = try FileManager.default.subpathsOfDirectory(atPath: scratch).filter {
            $0.hasSuffix(".c") || $0.hasSuffix(".h")
        }
        #expect(generated.count == 6, "two protocols: a client header, a server header and the tables each: \(generated)")
        for file in generated {
            let fresh = try Data(contentsOf: URL(fileURLWithPath: scratch + "/" + file))
            let kept = try Data(contentsOf: URL(fileURLWithPath: Self.root + "/" + file))
            #expect(fresh == kept, "\(file) differs from wayland-scanner's output: run scripts/generate-wayland-protocols.sh")
        }
        // The stand-in compositor links the same tables: one copy, linked.
        for name in ["wlr-foreign-toplevel-management-unstable-v1", "wlr-output-power-management-unstable-v1"] {
            let link = Self.root + "/Tests/OutputPowerCompositor/\(name)-protocol.c"
            #expect(
                (try? FileManager.default.destinationOfSymbolicLink(atPath: link))
                    == "../../Sources/CWaylandProtocols/\(name)-protocol.c", "\(link) is not the link to the client's tables")
        }
    }

    @Test func theProtocolsAreTheVersionsTheWatcherBinds() throws {
        let folder = Self.root + "/Sources/CWaylandProtocols/protocols/"
        let toplevel = try String(contentsOfFile: folder + "wlr-foreign-toplevel-management-unstable-v1.xml", encoding: .utf8)
        let power = try String(contentsOfFile: folder + "wlr-output-power-management-unstable-v1.xml", encoding: .utf8)
        #expect(toplevel.contains(#"<interface name="zwlr_foreign_toplevel_manager_v1" version="3">"#))
        #expect(toplevel.contains(#"<entry name="activated" value="2""#))
        #expect(power.contains(#"<interface name="zwlr_output_power_manager_v1" version="1">"#))
        #expect(power.contains(#"<entry name="on" value="1""#))
    }
}
