import Foundation
import SesameDomain
import SesameJSON
import Testing

@Suite("JSON diff")
struct JSONDiffTests {
    func json(_ text: String) throws -> JSONValue { try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) }

    @Test("equal documents have no changes; integers and their double are not confused")
    func equal() throws {
        let document = try json(#"{"a":{"b":[1,2,{"c":true}]},"d":null}"#)
        #expect(document.changes(to: document).isEmpty)
        #expect(try json(#"{"n":1}"#).changes(to: try json(#"{"n":1.5}"#)).map(\.kind) == [.changed])
    }

    @Test("added, removed and changed keys, nested, in key order, with their values")
    func objects() throws {
        let before = try json(#"{"api_keys":{"stripe":"sk_1","maps":"m"},"features":{"chat":true},"old":1}"#)
        let after = try json(#"{"api_keys":{"stripe":"sk_2","maps":"m"},"features":{"chat":true,"voice":false},"new":"x"}"#)
        let changes = before.changes(to: after)
        #expect(changes == [
            JSONChange(path: ["api_keys", "stripe"], kind: .changed, from: .string("sk_1"), to: .string("sk_2")),
            JSONChange(path: ["features", "voice"], kind: .added, from: nil, to: .bool(false)),
            JSONChange(path: ["new"], kind: .added, from: nil, to: .string("x")),
            JSONChange(path: ["old"], kind: .removed, from: .integer(1), to: nil),
        ])
    }

    @Test("arrays by index; a value changing type is a change of the whole value")
    func arraysAndTypes() throws {
        #expect(try json(#"[1,2,3]"#).changes(to: try json(#"[1,5]"#)) == [
            JSONChange(path: ["1"], kind: .changed, from: .integer(2), to: .integer(5)),
            JSONChange(path: ["2"], kind: .removed, from: .integer(3), to: nil),
        ])
        #expect(try json(#"{"a":{"b":1}}"#).changes(to: try json(#"{"a":[1]}"#)) == [
            JSONChange(path: ["a"], kind: .changed, from: .object(["b": .integer(1)]), to: .array([.integer(1)]))
        ])
    }
}
