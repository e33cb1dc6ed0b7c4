import Logging
import ServiceLifecycle
import SesameStorage

/// Every `interval` (`SESAME_ATTESTATION_ROUND_INTERVAL`), on every replica: adds the attestation
/// counts to the database, moves the automatic attestation ramps (`AttestationRampRule`), and reads
/// where they stand for the challenges. A round is bounded by a minute; one that fails is tried again
/// at the next.
struct AttestationRampKeeper: Service {
    let outcomes: AttestationOutcomes
    let ramps: AttestationRamps
    let database: Database
    let interval: Duration
    let logger: Logger

    func run() async throws {
        await runPeriodicRounds(every: interval, bound: .seconds(60), named: "attestation", logger: logger) { [self] in try await round() }
        // What was counted since the last round, on the way out.
        try? await withTimeout(.seconds(5)) { [self] in try await outcomes.flush(to: database, logger: logger) }
    }

    func round() async throws {
        try await outcomes.flush(to: database, logger: logger)
        try await ramps.advance()
        try await ramps.reload()
    }
}
