import Foundation
import SesameDomain
import SesameJSON
import Testing

@Suite("API token audiences")
struct APIAudienceTests {
    @Test("Sesame's own audiences and a relay's cannot be an app's API audience; an app's own can", arguments: ["sesame-api", "sesame-refresh", "sesame-relay:llm"])
    func reserved(audience: String) {
        #expect(!APIAudience.isValid(audience))
        #expect(APIAudience.isValid("https://api.example.com"))
    }

    @Test("a relay's audience is the prefix and a relay's name")
    func relayAudiences() {
        #expect(APIAudience.isRelayAudience("sesame-relay:llm-2"))
        for malformed in ["sesame-relay:", "sesame-relay:LLM", "sesame-relay:-x", "sesame-relay:a/b", "relay:llm", "sesame-relay"] {
            #expect(!APIAudience.isRelayAudience(malformed), "\(malformed)")
        }
    }

    @Test("a 500-deep JSON document decodes into a JSONValue (containers are tried before scalars)")
    func deepDocument() throws {
        let text = String(repeating: "{\"a\":", count: 500) + "[1, 2.5, \"x\", true, null]" + String(repeating: "}", count: 500)
        var value = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        for _ in 0..<500 {
            guard case .object(let members) = value, let inner = members["a"] else { Issue.record("not an object"); return }
            value = inner
        }
        #expect(value == .array([.integer(1), .number(2.5), .string("x"), .bool(true), .null]))
    }
}
