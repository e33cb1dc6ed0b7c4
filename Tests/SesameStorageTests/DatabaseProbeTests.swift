import Foundation
import Logging
import PostgresNIO
import SesameTestSupport
import Testing

@testable import SesameStorage

/// The probe behind readiness keeps a connection of its own; closed (at shutdown, or when a moved
/// database's old pool is retired), it must not keep or make one.
@Suite("The database probe", .timeLimit(.minutes(1)))
struct DatabaseProbeTests {
    let logger = Logger(label: "database-probe-test")

    @Test("a probe answers over one connection it keeps, and closing it closes that connection")
    func keepsOneConnection() async throws {
        try await TestDatabase.withFreshDatabase { url in
            let probe = DatabaseProbe(url: url, logger: logger)
            #expect(await probe.isReachable(timeout: .seconds(5)))
            #expect(await probe.isReachable(timeout: .seconds(5)))
            #expect(try await TestDatabase.backends(of: url.database) == 1)
            await probe.close()
            try await eventually(timeout: .seconds(5), pollEvery: .milliseconds(100), "the closed probe's connection closed") {
                try await TestDatabase.backends(of: url.database) == 0
            }
        }
    }

    @Test("a probe closed while it connects leaves no connection open, and answers false after it")
    func closedWhileConnecting() async throws {
        try await TestDatabase.withFreshDatabase { url in
            for _ in 0..<10 {
                let probe = DatabaseProbe(url: url, logger: logger)
                // The close reaches the actor before the probe connects, or while it connects.
                async let answered = probe.isReachable(timeout: .seconds(5))
                await probe.close()
                _ = await answered
                #expect(await probe.isReachable(timeout: .seconds(5)) == false, "a closed probe connected again")
            }
            try await eventually(timeout: .seconds(5), pollEvery: .milliseconds(100), "every closed probe's connection closed") {
                try await TestDatabase.backends(of: url.database) == 0
            }
        }
    }
}
