import SesameHTTP
import Testing

@Suite("NUL characters are refused at the edge")
struct NulCharacterGuardTests {
    @Test("a JSON string or key holding \\u0000 is seen", arguments: [
        #"{"reason":"x\u0000y"}"#, #"{"a\u0000":1}"#, #"["\u0000"]"#, #"{"a":"\\\u0000"}"#, #"{"a":"\"\u0000"}"#,
    ])
    func seen(json: String) {
        #expect(NulCharacterGuard.jsonHasNul(Array(json.utf8)))
    }

    @Test("other escapes, an escaped backslash before u0000, and text outside strings are not", arguments: [
        #"{"a":"x\\u0000y"}"#, #"{"a":"\u0041\u0100\u000a"}"#, #"{"u0000":"\\"}"#, #"{"a":"ok"} u0000"#, #"{"a":"\u000"}"#,
    ])
    func notSeen(json: String) {
        #expect(!NulCharacterGuard.jsonHasNul(Array(json.utf8)))
    }

    @Test("an encoded NUL in a request target is seen; an encoded percent sign before 00 is not")
    func uris() {
        #expect(NulCharacterGuard.uriHasNul("/v1/admin/debug-tokens/a%00b"))
        #expect(NulCharacterGuard.uriHasNul("/v1/admin/pins?domainName=x%00&key=y"))
        #expect(!NulCharacterGuard.uriHasNul("/v1/admin/pins?domainName=x%2500"))
        #expect(!NulCharacterGuard.uriHasNul("/v1/config?version=1.0.0"))
        #expect(!NulCharacterGuard.uriHasNul("/a%0b%20%0"))
        #expect(NulCharacterGuard.uriHasNul("/a%%00"))
    }
}
