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

    @Test("two Authorization fields read as one joined value, as HTTPFields' subscript reads them: never only the first")
    func repeatedField() {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .authorization, value: "Bearer first"))
        fields.append(HTTPField(name: .accept, value: "*/*"))
        fields.append(HTTPField(name: .authorization, value: "Bearer second"))
        #expect(fields.value(of: .authorization) == fields[.authorization])
        #expect(fields.bearerCredential == "first, Bearer second")
        #expect(fields.value(of: .accept) == "*/*")
        #expect(fields.value(of: .cookie) == nil)
    }
}
