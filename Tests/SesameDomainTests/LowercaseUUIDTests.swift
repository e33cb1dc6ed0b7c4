import Foundation
import SesameDomain
import Testing

@Suite("UUIDs in answers")
struct LowercaseUUIDTests {
    struct Message: Codable, Equatable {
        @LowercaseUUID var id: UUID
        @LowercaseOptionalUUID var pending: UUID?
    }

    static let id = UUID(uuidString: "6BA7B810-9DAD-11D1-80B4-00C04FD430C8")!

    @Test("are written in lower case, as the audit log and webhooks write them; an absent optional one is left out")
    func written() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let both = String(decoding: try encoder.encode(Message(id: Self.id, pending: Self.id)), as: UTF8.self)
        #expect(both == #"{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","pending":"6ba7b810-9dad-11d1-80b4-00c04fd430c8"}"#)
        let one = String(decoding: try encoder.encode(Message(id: Self.id, pending: nil)), as: UTF8.self)
        #expect(one == #"{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8"}"#)
    }

    @Test("are read in either case; a missing or null optional one is nil, a malformed one an error")
    func read() throws {
        let decoder = JSONDecoder()
        for text in [#"{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8"}"#, #"{"id":"6BA7B810-9DAD-11D1-80B4-00C04FD430C8","pending":null}"#] {
            #expect(try decoder.decode(Message.self, from: Data(text.utf8)) == Message(id: Self.id, pending: nil))
        }
        let upper = #"{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","pending":"6BA7B810-9DAD-11D1-80B4-00C04FD430C8"}"#
        #expect(try decoder.decode(Message.self, from: Data(upper.utf8)).pending == Self.id)
        #expect(throws: DecodingError.self) { try decoder.decode(Message.self, from: Data(#"{"id":"not-a-uuid"}"#.utf8)) }
    }
}
