import ChildProcess
import Foundation
import Synchronization

/// Whether the PostgreSQL and broker the test command started answer at all, asked once per test
/// process and address, so that `swift test` run alone (or after the services died) fails every
/// integration test at once with one sentence instead of each test's connection retries and
/// timeouts.
enum TestServiceReachability {
    private static let answers = Mutex<[String: Bool]>([:])

    /// Throws `TestDatabase.Unavailable` naming `what`, its address and `variable` when nothing
    /// accepts a TCP connection there within a second.
    static func require(_ what: String, host: String, port: Int, variable: String) throws {
        let address = "\(host):\(port)"
        let answered = answers.withLock { known in
            if let answer = known[address] { return answer }
            // A blocking connect, once per address and process: a local address accepts or refuses
            // at once, and the poll bounds anything else to a second.
            let answer = PortProbe.accepts(host: host, port: port, timeoutMilliseconds: 1000)
            known[address] = answer
            return answer
        }
        guard answered else {
            throw TestDatabase.Unavailable(
                description: "\(what) at \(address) (\(variable)) is not answering: integration tests need the PostgreSQL and "
                    + "broker that ./sesame-dev test starts. Run the tests with ./sesame-dev test [--filter NAME]")
        }
    }
}
