import Testing

@testable import IIOBridge

@Suite struct ScanTypeTests {
    @Test(arguments: [
        ("le:s16/16>>0", ScanType(endianness: .little, isSigned: true, realBits: 16, storageBits: 16)),
        ("be:s12/16>>4", ScanType(endianness: .big, isSigned: true, realBits: 12, storageBits: 16, shift: 4)),
        ("le:u32/32X2>>0", ScanType(endianness: .little, isSigned: false, realBits: 32, storageBits: 32, repeatCount: 2)),
        ("le:s13/16>>0\n", ScanType(endianness: .little, isSigned: true, realBits: 13, storageBits: 16)),
        ("le:s48/64>>2", ScanType(endianness: .little, isSigned: true, realBits: 48, storageBits: 64, shift: 2)),
        ("be:u8/8", ScanType(endianness: .big, isSigned: false, realBits: 8, storageBits: 8)),
        ("le:s32/32X4>>0", ScanType(endianness: .little, isSigned: true, realBits: 32, storageBits: 32, repeatCount: 4)),
        ("le:s64/64>>0", ScanType(endianness: .little, isSigned: true, realBits: 64, storageBits: 64)),
    ])
    func parsesKernelFormats(text: String, expected: ScanType) throws {
        #expect(try ScanType(parsing: text) == expected)
    }

    @Test func printsLikeTheKernel() throws {
        for text in ["le:s16/16>>0", "be:s12/16>>4", "le:u32/32X2>>0", "le:s64/64>>0"] {
            #expect(try ScanType(parsing: text).description == text)
        }
    }

    @Test func sizes() throws {
        let type = try ScanType(parsing: "le:u32/32X2>>0")
        #expect(type.storageBytes == 4)
        #expect(type.elementBytes == 8)
    }

    @Test(arguments: [
        ("", "expected 'be:' or 'le:'"),
        ("xx:s16/16>>0", "expected 'be:' or 'le:'"),
        ("le s16/16>>0", "expected 'be:' or 'le:'"),
        ("le:q16/16>>0", "sign must be"),
        ("le:f16/16>>0", "floating-point"),
        ("le:s/16>>0", "real bits"),
        ("le:s16>>0", "storagebits"),
        ("le:s16/12>>0", "storage bits must be"),
        ("le:s17/16>>0", "real bits must be"),
        ("le:s0/16>>0", "real bits must be"),
        ("le:s12/16>>5", "shift + real bits"),
        ("le:s16/16X>>0", "repeat count after 'X'"),
        ("le:s16/16X0>>0", "repeat count must be"),
        ("le:s16/16>>", "shift after"),
        ("le:s16/16>>0 junk", "unexpected text"),
        ("le:s16/16>>0;", "unexpected text"),
        ("le:s99999999999/16", "real bits"),
        ("garbage", "expected 'be:' or 'le:'"),
    ])
    func rejectsGarbage(text: String, reason: String) {
        #expect {
            try ScanType(parsing: text)
        } throws: { error in
            guard let error = error as? ScanTypeError else { return false }
            return error.reason.contains(reason) && error.description.contains("scan type")
        }
    }
}
