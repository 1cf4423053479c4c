import Foundation
import Glibc
import SensorSimulation
import SensorTestKit
import SystemBus
import Testing

/// What goes on the wire, byte for byte: a call's arguments as sd-bus marshals them from our
/// values, caught by `dbus-monitor --binary` on a private bus and compared with the encoding
/// the specification gives (little-endian, each value aligned to its size, an array's length
/// counting from its first element after the padding for that element).
@Suite(.timeLimit(.minutes(3))) struct DBusWireTests {
    static let expectedBody: [UInt8] = [
        0x01, 0x00, 0x00, 0x00,  // y 1, padding to 4
        0x04, 0x03, 0x02, 0x01,  // u 0x01020304
        0x02, 0x00, 0x00, 0x00, 0x61, 0x62, 0x00,  // s "ab": length, bytes, NUL
        0x00,  // padding to 4
        0x04, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0x02, 0x00,  // an [-1, 2]: 4 bytes of int16s
        0x01, 0x62, 0x00,  // v: signature "b"
        0x00, 0x01, 0x00, 0x00, 0x00,  // padding to 4, b true
        0x18, 0x00, 0x00, 0x00,  // a{sv}: 24 bytes of entries
        0x00, 0x00, 0x00, 0x00,  // padding to 8 (entries are structures)
        0x01, 0x00, 0x00, 0x00, 0x6B, 0x00,  // key s "k"
        0x01, 0x74, 0x00,  // v: signature "t"
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // padding to 8
        0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // t 5
    ]

    static let arguments: [DBusValue] = [
        .byte(1), .uint32(0x0102_0304), .string("ab"), .array(.int16, [.int16(-1), .int16(2)]), .variant(.boolean(true)),
        .dictionary(key: .string, value: .variant, [DBusDictionaryEntry(.string("k"), .variant(.uint64(5)))]),
    ]

    @Test func aCallsArgumentsAreMarshalledAsTheSpecificationSays() throws {
        try TestEnvironment.require(.tools([("/usr/bin/dbus-monitor", "dbus-bin")]))
        let rig = try LiveBus(service: false)
        let capture = rig.bus.folder + "/capture.bin"
        let output = open(capture, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        try #require(output >= 0)
        try rig.bus.spawn(
            ["/usr/bin/dbus-monitor", "--address", rig.bus.address, "--binary", "interface='org.sensorkit.Wire'"],
            log: "monitor", stdout: output)
        close(output)
        // The monitor is ready some time after it starts: send until it has caught one call.
        let deadline = Date().addingTimeInterval(LiveBus.patience)
        var caught: [UInt8]?
        while caught == nil {
            guard Date() < deadline else { throw LiveBus.Timeout(what: "dbus-monitor to catch the call\n\(rig.bus.logText())") }
            _ = try? LiveBus.wait { queue, completion in
                rig.connection.call(
                    destination: "org.freedesktop.DBus", path: DBusStandard.busPath, interface: "org.sensorkit.Wire",
                    member: "Check", arguments: Self.arguments, timeout: .seconds(5), queue: queue, completion: completion)
            }
            caught = Self.methodCalls(in: Array((try? Data(contentsOf: URL(fileURLWithPath: capture))) ?? Data())).first
            if caught == nil { usleep(50_000) }
        }
        let message = try #require(caught)
        #expect(Array(message[0..<4]) == [UInt8(ascii: "l"), 1, message[2], 1])  // little-endian, method call, version 1
        let bodyLength = Int(message[4]) | Int(message[5]) << 8 | Int(message[6]) << 16 | Int(message[7]) << 24
        #expect(bodyLength == Self.expectedBody.count)
        #expect(Array(message.suffix(bodyLength)) == Self.expectedBody)
        // Header field 8 (signature): code, variant signature "g", length 11, the text, NUL.
        #expect(message.firstRange(of: [0x08, 0x01, 0x67, 0x00, 0x0B] + Array("yusanva{sv}".utf8) + [0x00]) != nil)
    }

    /// Splits a `--binary` stream into messages by their own lengths; keeps the method calls.
    static func methodCalls(in stream: [UInt8]) -> [[UInt8]] {
        var calls: [[UInt8]] = []
        var offset = 0
        while stream.count - offset >= 16 {
            func u32(_ at: Int) -> Int {
                Int(stream[offset + at]) | Int(stream[offset + at + 1]) << 8 | Int(stream[offset + at + 2]) << 16 | Int(
                    stream[offset + at + 3]) << 24
            }
            guard stream[offset] == UInt8(ascii: "l") else { break }
            let fields = u32(12)
            let header = (16 + fields + 7) / 8 * 8
            let total = header + u32(4)
            guard total <= stream.count - offset else { break }
            if stream[offset + 1] == 1 { calls.append(Array(stream[offset..<(offset + total)])) }
            offset += total
        }
        return calls
    }
}
