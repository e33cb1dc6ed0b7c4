import ConfigSchema
import NIOPosix
import ServiceLifecycle
import SesameHTTP
import Synchronization

/// Where config schema checks run (round 3 bounded each one; issue 72 bounds each app): threads of
/// their own, off the cooperative pool and NIO's shared blocking pool (which admin's outbound name
/// lookups use), and admission per app. At most `perApp` checks of one app are queued or running at
/// once and `capacity` in all; past either the request is refused `429 schema_validation_busy`
/// before it waits. A check's time budget (`ValidationBudget.defaultTime`) starts when it is asked
/// for, not when a thread takes it, so a queue cannot stretch it.
final class SchemaValidationPool: Service, Sendable {
    static let threads = 2
    static let perApp = 2
    static let capacity = 16

    private let pool: NIOThreadPool
    private let admitted = Mutex<(total: Int, byApp: [String: Int])>((0, [:]))

    init(threads: Int = SchemaValidationPool.threads) {
        pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
    }

    /// Runs `check` for `appID` on the pool with a budget whose time started now, or refuses it
    /// when the app, or everyone, has as many checks in hand as allowed.
    func run<Result: Sendable>(
        appID: String, _ check: @escaping @Sendable (ValidationBudget) throws -> Result
    ) async throws -> Result {
        guard take(appID) else { throw AdminErrors.schemaValidationBusy }
        defer { giveBack(appID) }
        let deadline = ContinuousClock.now.advanced(by: ValidationBudget.defaultTime)
        return try await pool.runIfActive { try check(ValidationBudget(deadline: deadline)) }
    }

    /// The checks of `appID` queued or running now.
    func inHand(_ appID: String) -> Int {
        admitted.withLock { $0.byApp[appID, default: 0] }
    }

    private func take(_ appID: String) -> Bool {
        admitted.withLock { admitted in
            guard admitted.total < Self.capacity, admitted.byApp[appID, default: 0] < Self.perApp else { return false }
            admitted.total += 1
            admitted.byApp[appID, default: 0] += 1
            return true
        }
    }

    private func giveBack(_ appID: String) {
        admitted.withLock { admitted in
            admitted.total -= 1
            let left = admitted.byApp[appID, default: 1] - 1
            admitted.byApp[appID] = left > 0 ? left : nil
        }
    }

    /// Ends the threads (a pool outside a service group ends them itself).
    func shutdown() async throws {
        try await pool.shutdownGracefully()
    }

    /// Keeps the threads for the service's life.
    func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }
}
