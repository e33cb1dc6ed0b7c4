import AppAttestTesting
import CBOR
import Testing

@Suite("CBOR decoder: strict, bounded")
struct CBORDecoderTests {
    @Test("round-trips the shapes App Attest uses")
    func roundTrip() throws {
        let value = CBORValue.map([
            .init(key: .text("fmt"), value: .text("apple-appattest")),
            .init(key: .text("x5c"), value: .array([.bytes([1, 2, 3]), .bytes(Array(repeating: 7, count: 300))])),
            .init(key: .unsigned(3), value: .negative(6)),
            .init(key: .negative(0), value: .unsigned(70000)),
            .init(key: .text("big"), value: .unsigned(UInt64.max)),
        ])
        let decoded = try CBORDecoder().decode(CBOREncoder.encode(value))
        #expect(decoded == value)
        #expect(decoded["fmt"]?.textString == "apple-appattest")
        #expect(decoded[integerKey: 3] == .negative(6))
        #expect(decoded[integerKey: -1] == .unsigned(70000))
    }

    @Test(
        "malformed input gives the right error",
        arguments: [
            ([], CBORError.truncated),
            ([0x18], .truncated),
            ([0x5a, 0xff, 0xff, 0xff, 0xff], .lengthOutOfRange),  // 4 GiB byte string in 5 bytes
            ([0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], .lengthOutOfRange),  // 2^64 elements
            ([0x5f], .unsupported(0x5f)),  // indefinite length
            ([0xc0, 0x00], .unsupported(0xc0)),  // tag
            ([0xf9, 0x00, 0x00], .unsupported(0xf9)),  // float
            ([0x62, 0xff, 0xfe], .invalidUTF8),
            ([0x00, 0x00], .trailingBytes),
            ([0xa2, 0x01, 0x00, 0x01, 0x00], .duplicateKey),
        ] as [([UInt8], CBORError)]
    )
    func malformed(bytes: [UInt8], expected: CBORError) {
        #expect(throws: expected) { try CBORDecoder().decode(bytes) }
    }

    @Test("nesting deeper than the limit is refused without recursing further")
    func deepNesting() {
        let bytes = [UInt8](repeating: 0x81, count: 100_000) + [0x00]
        #expect(throws: CBORError.tooDeep) { try CBORDecoder().decode(bytes) }
    }

    @Test("collections larger than the limit are refused")
    func hugeCollections() {
        let bytes: [UInt8] = [0x99, 0x01, 0x01] + [UInt8](repeating: 0x00, count: 257)
        #expect(throws: CBORError.lengthOutOfRange) { try CBORDecoder().decode(bytes) }
    }

    @Test("random bytes never crash the decoder")
    func randomBytes() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5000 {
            let bytes = (0..<Int.random(in: 0..<64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try? CBORDecoder().decode(bytes)
        }
    }
}
