import SesameHTTP
import Testing

@Suite("Request body limits")
struct RequestLimitsTests {
    @Test("the most specific matching path prefix sets the limit; other paths get the default")
    func limitsByPrefix() {
        let limits = RequestLimitsMiddleware(maxBodyBytes: 1000, limitsByPathPrefix: [PathPrefix("v1/admin"): 5000, PathPrefix("/v1/admin/blob"): 90_000, PathPrefix("/v1/auth/"): 64])
        #expect(limits.limit(for: "/v1/admin/config/upload") == 5000)
        #expect(limits.limit(for: "/v1/admin/blob/model.bin") == 90_000)
        #expect(limits.limit(for: "/v1/auth/attest") == 64)
        #expect(limits.limit(for: "/v1/config") == 1000)
        #expect(limits.limit(for: "/v1/administrator") == 1000)
    }

    @Test("a prefix covers itself and what is below it, on whole segments")
    func prefixes() {
        #expect(PathPrefix("/v1/config").covers("/v1/config"))
        #expect(PathPrefix("v1/config/").covers("/v1/config/x"))
        #expect(!PathPrefix("/v1/config").covers("/v1/configs"))
        #expect(!PathPrefix("/v1/config").covers("/v1"))
        #expect(PathPrefix("/").covers("/anything"))
        #expect(PathPrefix("//v1//admin/").path == "/v1/admin")
        #expect(PathPrefix("/v1/admin/blob").depth == 3)
    }
}
