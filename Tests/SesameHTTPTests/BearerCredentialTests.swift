import HTTPTypes
import Testing

@testable import SesameHTTP

@Suite("Bearer credentials")
struct BearerCredentialTests {
    @Test("the scheme in any case, blanks around the credential trimmed; anything else is no credential")
    func parsing() {
        func credential(_ header: String?) -> String? {
            var fields = HTTPFields()
            if let header { fields[.authorization] = header }
            return fields.bearerCredential
        }
        #expect(credential("Bearer abc.def") == "abc.def")
        #expect(credential("bearer abc") == "abc")
        #expect(credential("BEARER \t abc \t") == "abc")
        #expect(credential("Bearer a b") == "a b")
        #expect(credential("Bearer é") == "é")
        for refused in [nil, "", "Bearer", "Bearer ", "Bearer   ", "Basic abc", "Bearerabc", "Token abc"] {
            #expect(credential(refused) == nil, "\(refused ?? "no header")")
        }
    }
}
