import SesameHTTP
import Testing

@Suite("Request body limits")
struct RequestLimitsTests {
    @Test("the longest matching path prefix sets the limit; other paths get the default")
    func limitsByPrefix() {
        let limits = RequestLimitsMiddleware(maxBodyBytes: 1000, limitsByPathPrefix: ["/v1/admin/": 5000, "/v1/admin/blob/": 90_000, "/v1/auth/": 64])
        #expect(limits.limit(for: "/v1/admin/config/upload") == 5000)
        #expect(limits.limit(for: "/v1/admin/blob/model.bin") == 90_000)
        #expect(limits.limit(for: "/v1/auth/attest") == 64)
        #expect(limits.limit(for: "/v1/config") == 1000)
        #expect(limits.limit(for: "/v1/administrator") == 1000)
    }
}
