import SesameStorage
@testable import SesameTestSupport
import Testing

@Suite("the test services' reachability check")
struct TestServiceReachabilityTests {
    @Test("an address nothing listens on fails at once with one sentence; the test command's PostgreSQL answers")
    func reachability() throws {
        let clock = ContinuousClock()
        let started = clock.now
        #expect {
            try TestServiceReachability.require("PostgreSQL", host: "127.0.0.1", port: 1, variable: TestDatabase.variable)
        } throws: { error in
            "\(error)".contains("PostgreSQL at 127.0.0.1:1 (SESAME_TEST_DATABASE_URL) is not answering") && "\(error)".contains("./sesame-dev test")
        }
        #expect(clock.now - started < .seconds(2))
        // The server the test command started passes the same check.
        let server = try TestDatabase.serverURL()
        try TestServiceReachability.require("PostgreSQL", host: server.host, port: server.port, variable: TestDatabase.variable)
    }
}
