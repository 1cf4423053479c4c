import Testing

@testable import SystemBus

/// Signatures by the specification's rules, byte for byte: what parses prints back to the same
/// bytes, and what breaks a rule is refused with the rule named — never a trap.
@Suite struct DBusSignatureTests {
    @Test(arguments: [
        "", "y", "bnqiuxtdsogh", "v", "as", "aay", "a{sv}", "a{oa{sa{sv}}}", "a(susso)", "(ii)",
        "a{s(ib)}", "sa{sv}as", "oa{sa{sv}}", "a{ta{sv}}", "((y)(q))",
    ])
    func validSignaturesPrintBackByteForByte(_ text: String) throws {
        let signature = try DBusSignature(text)
        #expect(signature.bytes == Array(text.utf8))
        #expect(signature.description == text)
    }

    @Test func managedObjectsSignatureParsesToItsTypes() throws {
        let type = try DBusSignature.single("a{oa{sa{sv}}}")
        #expect(
            type
                == .dictionary(
                    key: .objectPath, value: .dictionary(key: .string, value: .dictionary(key: .string, value: .variant))))
        #expect(try DBusSignature("a(susso)").types == [.array(.structure([.string, .uint32, .string, .string, .objectPath]))])
    }

    @Test func brokenSignaturesAreRefusedWithTheRule() {
        let cases: [(String, DBusSignatureError)] = [
            ("a", .truncated(at: 1)),
            ("{sv}", .invalidDictionaryEntry(at: 0)),
            ("a{vs}", .invalidDictionaryKey(at: 2)),
            ("a{s}", .invalidDictionaryEntry(at: 3)),
            ("a{sss}", .invalidDictionaryEntry(at: 4)),
            ("a{(i)s}", .invalidDictionaryKey(at: 2)),
            ("a{sv", .truncated(at: 4)),
            ("a{", .truncated(at: 2)),
            ("a{s", .truncated(at: 3)),
            ("()", .emptyStructure(at: 1)),
            ("(i", .truncated(at: 2)),
            (")", .unknownTypeCode(UInt8(ascii: ")"), at: 0)),
            ("z", .unknownTypeCode(UInt8(ascii: "z"), at: 0)),
            ("s\u{0}", .unknownTypeCode(0, at: 1)),
        ]
        for (text, expected) in cases {
            #expect(throws: expected, "\(text)") { try DBusSignature(text) }
        }
    }

    @Test func lengthAndNestingLimitsAreTheSpecifications() throws {
        _ = try DBusSignature(String(repeating: "y", count: 255))
        #expect(throws: DBusSignatureError.tooLong(256)) { try DBusSignature(String(repeating: "y", count: 256)) }
        _ = try DBusSignature(String(repeating: "a", count: 32) + "y")
        #expect(throws: DBusSignatureError.tooDeep(at: 32)) { try DBusSignature(String(repeating: "a", count: 33) + "y") }
        _ = try DBusSignature(String(repeating: "(", count: 32) + "y" + String(repeating: ")", count: 32))
        #expect(throws: DBusSignatureError.tooDeep(at: 32)) {
            try DBusSignature(String(repeating: "(", count: 33) + "y" + String(repeating: ")", count: 33))
        }
        // Dictionary entries count as structures.
        #expect(throws: DBusSignatureError.self) {
            try DBusSignature(String(repeating: "a{s", count: 33) + "y" + String(repeating: "}", count: 33))
        }
        #expect(throws: DBusSignatureError.notSingleType("ss")) { try DBusSignature.single("ss") }
    }

    @Test func valuesKnowTheirSignatures() throws {
        let value = DBusValue.structure([
            .array(.byte, [.byte(1)]),
            .dictionary(key: .string, value: .variant, [DBusDictionaryEntry(.string("a"), .variant(.int16(-1)))]),
            .objectPath(try DBusObjectPath("/a/b_1")), .unixFD(DBusFileDescriptor(owning: -1)),
            .signature(try DBusSignature("a{sv}")),
        ])
        #expect(value.type.signatureBytes == Array("(aya{sv}ohg)".utf8))
    }
}
