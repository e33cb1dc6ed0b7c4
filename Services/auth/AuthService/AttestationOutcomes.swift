import Logging
import PostgresNIO
import SesameStorage
import Synchronization

/// How each app's attestations went: auth's verdicts and what SesameKit reported from the device,
/// counted in memory and added to `attestation_outcomes` (a row per app and hour) by the ramp keeper's
/// rounds. The automatic attestation ramp reads its success rate there, and the dashboard its view.
/// Only apps looked up as registered are counted, so memory is bounded by the apps; a replica that
/// dies loses at most one round's counts.
final class AttestationOutcomes: Sendable {
    enum Outcome: Int, CaseIterable, Sendable {
        /// An attestation verified and admitted.
        case attested
        /// An attestation refused at one of Apple's validation steps.
        case refused
        /// SesameKit: App Attest failed on the device (other than Apple's rate limit).
        case deviceFailed
        /// SesameKit: Apple answered `serverUnavailable` (its rate limit) after the retries.
        case rateLimited
        /// SesameKit: `DCAppAttestService.isSupported` is false; the install asked for the unattested tier.
        case unsupported
        /// SesameKit: the install fell outside the attestation ramp and asked for the unattested tier.
        case outsideRamp
    }

    private let pending = Mutex<[String: [Int64]]>([:])

    func count(_ outcome: Outcome, appID: String) {
        pending.withLock { pending in
            pending[appID, default: Array(repeating: 0, count: Outcome.allCases.count)][outcome.rawValue] += 1
        }
    }

    /// Adds what was counted since the last flush to the current hour's rows; what could not be
    /// written is kept for the next (an app removed meanwhile is dropped).
    func flush(to database: Database, logger: Logger) async throws {
        let taken = pending.withLock { pending in
            defer { pending = [:] }
            return pending
        }
        var failure: (any Error)?
        for (appID, counts) in taken {
            do {
                try await database.client.query(
                    """
                    INSERT INTO attestation_outcomes (app_id, hour, attested, refused, device_failed, rate_limited, unsupported, outside_ramp)
                    SELECT app_id, date_trunc('hour', now()), \(counts[0]), \(counts[1]), \(counts[2]), \(counts[3]), \(counts[4]), \(counts[5])
                    FROM apps WHERE app_id = \(appID)
                    ON CONFLICT (app_id, hour) DO UPDATE SET
                        attested = attestation_outcomes.attested + EXCLUDED.attested,
                        refused = attestation_outcomes.refused + EXCLUDED.refused,
                        device_failed = attestation_outcomes.device_failed + EXCLUDED.device_failed,
                        rate_limited = attestation_outcomes.rate_limited + EXCLUDED.rate_limited,
                        unsupported = attestation_outcomes.unsupported + EXCLUDED.unsupported,
                        outside_ramp = attestation_outcomes.outside_ramp + EXCLUDED.outside_ramp
                    """, logger: logger)
            } catch {
                failure = error
                pending.withLock { pending in
                    let kept = pending[appID, default: Array(repeating: 0, count: Outcome.allCases.count)]
                    pending[appID] = zip(kept, counts).map { $0 + $1 }
                }
            }
        }
        if let failure { throw failure }
    }
}
