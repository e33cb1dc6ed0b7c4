import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameStorage

/// What `GET /v1/admin/attestation` reads: where the app's attestation ramp stands (auth moves an
/// automatic one in `attestation_ramps`) and auth's hourly counts (`attestation_outcomes`).
struct AttestationReport: Sendable {
    let database: Database
    let policies: PolicyStore
    let logger: Logger

    typealias Status = Components.Schemas.AttestationStatus
    typealias Counts = Components.Schemas.AttestationCounts

    func status(appID: String) async throws -> Status {
        let policy = try await policies.policy(appID: appID)
        var ramp = Status.rampPayload(percent: policy.attestationRamp, automatic: policy.attestationRampAutomatic)
        if policy.attestationRampAutomatic {
            let rows = try await database.client.query(
                "SELECT percent, started_from, widened_at, checked_at, hold_reason FROM attestation_ramps WHERE app_id = \(appID)",
                logger: logger)
            for try await (percent, startedFrom, widenedAt, checkedAt, holdReason) in rows.decode((Double, Double, Date, Date, String?).self)
            where policy.countsAutomaticRamp(from: startedFrom) {
                // A row counted from another start is auth's until its next round: the policy's start stands.
                ramp = .init(
                    percent: percent, automatic: true, startedFrom: startedFrom, widenedAt: widenedAt, checkedAt: checkedAt, holdReason: holdReason)
            }
        }
        var hours: [Status.hoursPayloadPayload] = []
        var day = Counts(attested: 0, refused: 0, deviceFailed: 0, rateLimited: 0, unsupported: 0, outsideRamp: 0)
        let rows = try await database.client.query(
            """
            SELECT hour, attested, refused, device_failed, rate_limited, unsupported, outside_ramp FROM attestation_outcomes
            WHERE app_id = \(appID) AND hour > now() - interval '1 day' ORDER BY hour
            """, logger: logger)
        for try await (hour, attested, refused, deviceFailed, rateLimited, unsupported, outsideRamp) in rows.decode(
            (Date, Int, Int, Int, Int, Int, Int).self)
        {
            let counts = Self.counts(attested, refused, deviceFailed, rateLimited, unsupported, outsideRamp)
            hours.append(.init(hour: hour, counts: counts))
            day = Self.counts(
                day.attested + attested, day.refused + refused, day.deviceFailed + deviceFailed, day.rateLimited + rateLimited,
                day.unsupported + unsupported, day.outsideRamp + outsideRamp)
        }
        return Status(ramp: ramp, lastDay: day, hours: hours)
    }

    /// Counts with their success rate, as the automatic ramp reckons it.
    static func counts(_ attested: Int, _ refused: Int, _ deviceFailed: Int, _ rateLimited: Int, _ unsupported: Int, _ outsideRamp: Int) -> Counts {
        let attempts = AttestationAttempts(
            attested: Int64(attested), refused: Int64(refused), deviceFailed: Int64(deviceFailed), rateLimited: Int64(rateLimited))
        return Counts(
            attested: attested, refused: refused, deviceFailed: deviceFailed, rateLimited: rateLimited, unsupported: unsupported,
            outsideRamp: outsideRamp, successRate: attempts.successRate)
    }
}
