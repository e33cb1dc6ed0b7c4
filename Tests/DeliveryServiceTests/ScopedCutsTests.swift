@testable import DeliveryService
import Foundation
import Testing

/// `scope` answers are cut once per view and scope, and never parsed on the event loop.
@Suite("Delivery: scoped answers")
struct ScopedCutsTests {
    static let body = Array(#"{"api_keys":{"stripe":"sk","maps":"mk"},"features":{"chat":true}}"#.utf8)

    @Test("the event loop gets only cuts already made; the router makes them once, and a bad scope is refused")
    func cutsAreMadeOffTheEventLoopAndKept() throws {
        let cuts = ScopedCuts()
        #expect(throws: ScopedCuts.Refusal.notCutYet) { try cuts.cut("api_keys.stripe", of: Self.body, revision: 3, mayParse: false) }
        let made = try cuts.cut("api_keys.stripe", of: Self.body, revision: 3, mayParse: true)
        #expect(String(decoding: made.body, as: UTF8.self) == #"{"api_keys":{"stripe":"sk"}}"#)
        let again = try cuts.cut("api_keys.stripe", of: Self.body, revision: 3, mayParse: false)
        #expect(again.body == made.body && again.etag == made.etag && made.etag.hasPrefix("\"3-"))
        // Another scope of a parsed view still waits for the router: selecting is work too.
        #expect(throws: ScopedCuts.Refusal.notCutYet) { try cuts.cut("features", of: Self.body, revision: 3, mayParse: false) }
        #expect(throws: ScopedCuts.Refusal.invalidScope) { try cuts.cut(",,", of: Self.body, revision: 3, mayParse: true) }
        #expect(throws: ScopedCuts.Refusal.invalidScope) {
            try cuts.cut(String(repeating: "a,", count: 101), of: Self.body, revision: 3, mayParse: true)
        }
        #expect(throws: ScopedCuts.Refusal.invalidScope) { try ScopedCuts().cut("a", of: Array("[1]".utf8), revision: 1, mayParse: true) }
    }

    @Test("scopes that differ only in spaces are one cut; past the capacity the scope used least recently goes, not all of them")
    func normalizedAndLeastRecentlyUsed() throws {
        let cuts = ScopedCuts()
        let made = try cuts.cut("api_keys.stripe,features", of: Self.body, revision: 1, mayParse: true)
        #expect(try cuts.cut(" api_keys.stripe , features ", of: Self.body, revision: 1, mayParse: false).etag == made.etag)
        for index in 0..<(ScopedCuts.capacity - 1) {
            _ = try cuts.cut("features.x\(index)", of: Self.body, revision: 1, mayParse: true)
            // The first scope stays in use, so it is never the least recent.
            _ = try cuts.cut("api_keys.stripe,features", of: Self.body, revision: 1, mayParse: false)
        }
        _ = try cuts.cut("features.overflow", of: Self.body, revision: 1, mayParse: true)
        #expect(throws: Never.self) { try cuts.cut("api_keys.stripe,features", of: Self.body, revision: 1, mayParse: false) }
        #expect(throws: ScopedCuts.Refusal.notCutYet) { try cuts.cut("features.x0", of: Self.body, revision: 1, mayParse: false) }
        #expect(throws: Never.self) { try cuts.cut("features.x1", of: Self.body, revision: 1, mayParse: false) }
    }
}
