import Foundation
import Testing

@testable import SesameJSON

/// JCS (RFC 8785) against the RFC's own examples and 300 random documents, all canonicalised by
/// the Python `rfc8785` package (`Vectors/make_vectors.py`).
@Suite("JSON Canonicalization Scheme")
struct CanonicalJSONTests {
    struct Vector: Decodable {
        let input: String
        let canonical: String
    }

    /// Reads JSON into `JSONValue` as any JSON parser would: every number a double.
    struct Parsed: Decodable {
        let value: JSONValue
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() { value = .null }
            else if let bool = try? container.decode(Bool.self) { value = .bool(bool) }
            else if let number = try? container.decode(Double.self) { value = .number(number) }
            else if let string = try? container.decode(String.self) { value = .string(string) }
            else if let array = try? container.decode([Parsed].self) { value = .array(array.map(\.value)) }
            else { value = .object(try container.decode([String: Parsed].self).mapValues(\.value)) }
        }
    }

    static let vectors: [Vector] = {
        let url = Bundle.module.url(forResource: "Vectors/jcs", withExtension: "json")!
        return try! JSONDecoder().decode([Vector].self, from: Data(contentsOf: url))
    }()

    @Test("every vector canonicalises to the bytes rfc8785 wrote, the RFC's numbers and sorting example among them")
    func vectors() throws {
        #expect(Self.vectors.count > 300)
        for vector in Self.vectors {
            let parsed = try JSONDecoder().decode(Parsed.self, from: Data(vector.input.utf8)).value
            let expected = try #require(Data(base64Encoded: vector.canonical))
            #expect(Data(try parsed.canonicalBytes()) == expected, "\(vector.input)")
        }
    }

    @Test("numbers as ECMAScript writes them")
    func numbers() throws {
        let cases: [(Double, String)] = [
            (0, "0"), (-0.0, "0"), (1, "1"), (-1, "-1"), (1.5, "1.5"), (100, "100"), (1e21, "1e+21"), (1e20, "100000000000000000000"),
            (1e-6, "0.000001"), (1e-7, "1e-7"), (123e-20, "1.23e-18"), (0.1, "0.1"), (.leastNonzeroMagnitude, "5e-324"), (9_007_199_254_740_992, "9007199254740992"),
            (1.7976931348623157e308, "1.7976931348623157e+308"), (5_488_607, "5488607"),
        ]
        for (value, text) in cases { #expect(try JSONValue.number(value).canonicalBytes() == Array(text.utf8), "\(value)") }
        #expect(throws: JSONValue.InvalidNumber.self) { try JSONValue.number(.nan).canonicalBytes() }
        #expect(throws: JSONValue.InvalidNumber.self) { try JSONValue.number(.infinity).canonicalBytes() }
    }

    @Test("strings escape only what JSON.stringify escapes; members sort by UTF-16 code units")
    func stringsAndOrder() throws {
        let text = JSONValue.string("a\"b\\c\n\u{01}\u{1F}\u{7F}/é\u{2028}😀")
        #expect(String(decoding: try text.canonicalBytes(), as: UTF8.self) == "\"a\\\"b\\\\c\\n\\u0001\\u001f\u{7F}/é\u{2028}😀\"")
        // U+FB33 sorts after U+1F600 in UTF-16 (a surrogate pair starts with 0xD83D), before it in scalars.
        let object = JSONValue.object(["\u{FB33}": .null, "😀": .null, "b": .bool(true), "a": .array([.number(2), .string("")])])
        #expect(String(decoding: try object.canonicalBytes(), as: UTF8.self) == "{\"a\":[2,\"\"],\"b\":true,\"😀\":null,\"\u{FB33}\":null}")
    }
}
