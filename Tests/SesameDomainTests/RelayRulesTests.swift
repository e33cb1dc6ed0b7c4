import Testing

@testable import SesameDomain

/// An attested relay's rules (issue 60): the bounds of each field, the path patterns an app may
/// call and the traversal they never let through, and the headers a relay may inject.
@Suite("Relay rules")
struct RelayRulesTests {
    static let valid = RelayRules(upstream: "https://api.example.com", methods: ["POST"], paths: ["/v1/chat/completions"])

    @Test("a relay's rules are refused field by field past each bound")
    func bounds() throws {
        try Self.valid.validate()
        var cases: [(String, (inout RelayRules) -> Void)] = [
            ("methods", { $0.methods = [] }), ("methods", { $0.methods = ["POST", "POST"] }), ("methods", { $0.methods = ["CONNECT"] }),
            ("paths", { $0.paths = [] }), ("paths", { $0.paths = ["/a", "/a"] }), ("paths", { $0.paths = (0...50).map { "/p\($0)" } }),
            ("paths", { $0.paths = ["/v1/../admin"] }), ("maxRequestBytes", { $0.maxRequestBytes = 0 }),
            ("maxResponseBytes", { $0.maxResponseBytes = (100 << 20) + 1 }), ("timeoutSeconds", { $0.timeoutSeconds = 301 }),
            ("perInstallPerMinute", { $0.perInstallPerMinute = 0 }), ("perAppPerDay", { $0.perAppPerDay = 10_000_001 }),
        ]
        cases.append(("perInstallPerDay", { $0.perInstallPerDay = -1 }))
        for (field, change) in cases {
            var rules = Self.valid
            change(&rules)
            #expect(throws: RelayRules.Invalid.self, "\(field)") { try rules.validate() }
            do { try rules.validate() } catch { #expect(error.field == field) }
        }
        #expect(RelayRules.isValidName("openai") && RelayRules.isValidName("maps-2") && RelayRules.isValidName(String(repeating: "a", count: 64)))
        for bad in ["", "-x", "Open", "a/b", "a.b", String(repeating: "a", count: 65), "é"] { #expect(!RelayRules.isValidName(bad), "\(bad)") }
    }

    @Test("path patterns: literals, * for one segment, a final ** for the rest; traversal, encoding and empty segments match nothing")
    func patterns() throws {
        let exact = try RelayPathPattern("/v1/chat/completions")
        #expect(exact.matches("/v1/chat/completions"))
        #expect(!exact.matches("/v1/chat/completions/x") && !exact.matches("/v1/chat") && !exact.matches("v1/chat/completions"))
        let one = try RelayPathPattern("/v1/models/*")
        #expect(one.matches("/v1/models/gpt-4o") && !one.matches("/v1/models") && !one.matches("/v1/models/a/b"))
        let rest = try RelayPathPattern("/maps/**")
        #expect(rest.matches("/maps/tiles/1/2/3") && rest.matches("/maps/x") && !rest.matches("/maps") && !rest.matches("/maps/"))
        for attack in [
            "/maps/../admin", "/maps/./x", "/maps/%2e%2e/admin", "/maps/a%2fb", "/maps//x", "/maps/x/..", "/v1/models/..", "/v1/chat/completions%00",
        ] {
            #expect(!rest.matches(attack) && !one.matches(attack) && !exact.matches(attack), "\(attack)")
        }
        for bad in ["", "v1", "/a/**/b", "/a/..", "/a/.", "/a//b", "/a/%2e", "/a b", "/" + String(repeating: "a/", count: 40), "/" + String(repeating: "x", count: 300)] {
            #expect(throws: RelayPathPattern.Invalid.self, "\(bad)") { try RelayPathPattern(bad) }
        }
    }

    @Test("injected headers: 1 to 10, token names other than framing and hop-by-hop ones, visible values of at most 8192; the value is never in the error")
    func headers() throws {
        try RelayHeaders.validate(["Authorization": "Bearer sk-secret", "X-Api-Key": "k"])
        let secret = "sk-" + String(repeating: "s", count: 20)
        for bad: [String: String] in [
            [:], Dictionary(uniqueKeysWithValues: (0...10).map { ("X-\($0)", "v") }), ["Host": "evil.example"], ["Content-Length": "1"],
            ["Transfer-Encoding": "chunked"], ["Bad Name": "v"], ["X": ""], ["X": String(repeating: "v", count: 8193)], ["X-Key": secret + "\r\nX-Injected: 1"],
        ] {
            do {
                try RelayHeaders.validate(bad)
                Issue.record("\(bad.keys) accepted")
            } catch {
                #expect(error.field == "headers" && !error.reason.contains(secret), "\(error.reason)")
            }
        }
    }

    @Test("forwarded: the caller's credentials, method and URL overrides, X-Sesame-*, hop-by-hop headers and those its Connection names are dropped, and an injected header cannot be overridden; returned: Set-Cookie, hop-by-hop and X-Sesame-* dropped, the upstream's mark added")
    func forwarding() {
        let caller: [(name: String, value: String)] = [
            ("Authorization", "Bearer access-token"), ("Cookie", "a=1"), ("X-Sesame-Identity-Token", "id"), ("Connection", "keep-alive, X-Hop"),
            ("X-Hop", "1"), ("Keep-Alive", "timeout=5"), ("Transfer-Encoding", "chunked"), ("Host", "sesame.example"), ("x-api-key", "spoofed"),
            ("X-Forwarded-For", "10.0.0.1"), ("Content-Type", "application/json"), ("Accept", "text/event-stream"),
            // Another method or URL than the relay's rules allowed, to servers that honour these.
            ("X-HTTP-Method-Override", "DELETE"), ("X-HTTP-Method", "DELETE"), ("X-Method-Override", "DELETE"), ("X-Original-URL", "/admin"),
            ("X-Rewrite-URL", "/admin"),
        ]
        let injected: [(name: String, value: String)] = [("Authorization", "Bearer sk-secret"), ("X-Api-Key", "k-secret")]
        let forwarded = RelayHeaders.forwarded(from: caller, injected: injected)
        #expect(forwarded.map { "\($0.name): \($0.value)" } == [
            "Content-Type: application/json", "Accept: text/event-stream", "Authorization: Bearer sk-secret", "X-Api-Key: k-secret",
        ])
        let upstream: [(name: String, value: String)] = [
            ("Content-Type", "text/event-stream"), ("Set-Cookie", "s=1"), ("set-cookie2", "s=2"), ("Connection", "close, X-Internal"),
            ("X-Internal", "x"), ("Transfer-Encoding", "chunked"), ("X-Request-Id", "up-1"), ("X-Sesame-Upstream", "0"), ("x-sesame-refusal", "1"),
        ]
        #expect(RelayHeaders.returned(from: upstream).map { "\($0.name): \($0.value)" } == [
            "Content-Type: text/event-stream", "X-Request-Id: up-1", "X-Sesame-Upstream: 1",
        ])
    }

    @Test("an upstream taken apart once: its origin lowercased with the port written (the default one too), an IPv6 host bracketed once, the base path without its final slash; no URL, no origin")
    func upstreamAndOrigin() throws {
        let openAI = try #require(RelayUpstream("HTTPS://API.OpenAI.com/v1/"))
        #expect(openAI.scheme == "https" && openAI.port == 443 && openAI.basePath == "/v1")
        #expect(openAI.origin == "https://api.openai.com:443")
        #expect(RelayRules.origin(of: "https://api.openai.com:443/v2") == openAI.origin, "the same origin, another base path")
        #expect(RelayRules.origin(of: "https://api.openai.com:8443") != openAI.origin)
        #expect(RelayRules.origin(of: "http://api.openai.com") == "http://api.openai.com:80")
        // Foundation keeps an IPv6 host's brackets: the address is taken without them, written with them once.
        let local = try #require(RelayUpstream("http://[::1]:8080/base"))
        #expect(local.host == "::1" && local.authority == "[::1]" && local.origin == "http://[::1]:8080")
        #expect(RelayUpstream("https://[2606:4700::1111]")?.origin == "https://[2606:4700::1111]:443")
        #expect(RelayUpstream("not a url") == nil && RelayRules.origin(of: "/relative") == nil)
    }
}
