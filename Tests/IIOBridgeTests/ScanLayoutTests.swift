import Testing

@testable import IIOBridge

@Suite struct ScanLayoutTests {
    static func spec(_ channel: String, _ index: Int, _ type: String) -> ScanElementSpec {
        ScanElementSpec(channel: channel, index: index, type: try! ScanType(parsing: type))
    }
    static let timestamp = spec("in_timestamp", 3, "le:s64/64>>0")

    @Test func threeAxesAndTimestampIs16Bytes() throws {
        let layout = try ScanLayout(
            elements: [
                Self.spec("in_accel_x", 0, "le:s16/16>>0"), Self.spec("in_accel_y", 1, "le:s16/16>>0"),
                Self.spec("in_accel_z", 2, "le:s16/16>>0"),
            ], timestamp: Self.timestamp)
        #expect(layout.slots.map(\.offset) == [0, 2, 4, 8])
        #expect(layout.timestamp?.offset == 8)
        #expect(layout.scanBytes == 16)
        #expect(layout.valueCount == 3)
    }

    @Test func elementsAreOrderedByIndexNotByArgumentOrder() throws {
        let layout = try ScanLayout(elements: [
            Self.spec("c", 9, "le:s16/16>>0"), Self.spec("a", 2, "le:s16/16>>0"),
            Self.spec("b", 5, "le:s16/16>>0"),
        ])
        #expect(layout.slots.map(\.channel) == ["a", "b", "c"])
        #expect(layout.slot(for: "c")?.firstValue == 2)
        #expect(layout.scanBytes == 6)
    }

    @Test func largerElementAfterSmallerIsAligned() throws {
        // u16 then u32: the u32 is aligned to 4, and the scan is padded to the largest (4).
        let layout = try ScanLayout(elements: [Self.spec("a", 0, "le:u16/16>>0"), Self.spec("b", 1, "le:u32/32>>0")])
        #expect(layout.slots.map(\.offset) == [0, 4])
        #expect(layout.scanBytes == 8)
    }

    @Test func scanIsPaddedToTheLargestElement() throws {
        // u32 then u16: 6 bytes of data, padded to 8 (the case libiio 0.24 got wrong).
        let layout = try ScanLayout(elements: [Self.spec("a", 0, "le:u32/32>>0"), Self.spec("b", 1, "le:u16/16>>0")])
        #expect(layout.slots.map(\.offset) == [0, 4])
        #expect(layout.scanBytes == 8)
        // u16, u16, u32, u16 (Jonathan Cameron's example in the 2019 fix discussion).
        let mixed = try ScanLayout(elements: [
            Self.spec("a", 0, "le:u16/16>>0"), Self.spec("b", 1, "le:u16/16>>0"),
            Self.spec("c", 2, "le:u32/32>>0"), Self.spec("d", 3, "le:u16/16>>0"),
        ])
        #expect(mixed.slots.map(\.offset) == [0, 2, 4, 8])
        #expect(mixed.scanBytes == 12)
    }

    @Test func repeatedElementsAlignToTheirWholeSize() throws {
        let layout = try ScanLayout(elements: [
            Self.spec("a", 0, "le:u16/16>>0"), Self.spec("pair", 1, "le:u32/32X2>>0"),
            Self.spec("b", 2, "le:u16/16>>0"),
        ])
        #expect(layout.slots.map(\.offset) == [0, 8, 16])
        #expect(layout.scanBytes == 24)
        #expect(layout.valueCount == 4)
        #expect(layout.slot(for: "b")?.firstValue == 3)
        // A quaternion (4 × s32) and a timestamp: 16 + 8 = 24, padded to the 16-byte element.
        let quaternion = try ScanLayout(
            elements: [Self.spec("in_rot_quaternion", 0, "le:s32/32X4>>0")],
            timestamp: Self.spec("in_timestamp", 1, "le:s64/64>>0"))
        #expect(quaternion.timestamp?.offset == 16)
        #expect(quaternion.scanBytes == 32)
    }

    @Test func timestampAloneIsAValidScan() throws {
        let layout = try ScanLayout(elements: [], timestamp: Self.timestamp)
        #expect(layout.scanBytes == 8)
        #expect(layout.valueCount == 0)
    }

    @Test func duplicateIndexIsRejected() {
        #expect(throws: ScanLayoutError.duplicateIndex(1, "a", "b")) {
            try ScanLayout(elements: [Self.spec("a", 1, "le:u16/16>>0"), Self.spec("b", 1, "le:u16/16>>0")])
        }
        #expect(throws: ScanLayoutError.duplicateIndex(3, "a", "in_timestamp")) {
            try ScanLayout(elements: [Self.spec("a", 3, "le:u16/16>>0")], timestamp: Self.timestamp)
        }
        #expect(throws: ScanLayoutError.nothingEnabled) { try ScanLayout(elements: []) }
    }
}
