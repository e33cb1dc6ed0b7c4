import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameJSON
import SesameStorage

/// A key whose receipt is due to be traded with Apple.
struct DueReceipt: Sendable {
    let keyID: [UInt8]
    let appID: String
    /// The attested key (X9.63), which every receipt of it must certify.
    let publicKey: [UInt8]
    /// The newest receipt: the attestation's, or the last one Apple gave.
    let receipt: [UInt8]
    let development: Bool
    /// Failed trades in a row.
    let failures: Int
}

/// The receipts' side of `attested_keys`: which are due, what each trade found, and the revocation
/// of a key whose risk metric is above the app's limit.
struct ReceiptRedemptions: Sendable {
    let database: Database
    let logger: Logger

    /// How a revocation for risk starts its reason, so a refresh can say `risk_too_high`.
    static let riskReasonPrefix = "risk metric "

    /// A receipt's state as stored.
    enum State: String {
        case verified, invalid
    }

    /// Up to `limit` due keys of apps that have a DeviceCheck key, oldest due first, each leased for
    /// ten minutes (another replica's round skips it; a round that dies leaves it due again).
    func claim(limit: Int) async throws -> [DueReceipt] {
        let rows = try await database.client.query(
            """
            UPDATE attested_keys k SET receipt_redeem_after = now() + interval '10 minutes'
            FROM (
                SELECT d.key_id FROM attested_keys d
                WHERE d.receipt_redeem_after <= now() AND d.revoked_at IS NULL
                    AND EXISTS (SELECT 1 FROM apple_credentials c WHERE c.app_id = d.app_id)
                ORDER BY d.receipt_redeem_after LIMIT \(limit) FOR UPDATE SKIP LOCKED
            ) due
            WHERE k.key_id = due.key_id
            RETURNING k.key_id, k.app_id, k.public_key, k.receipt, k.environment, k.receipt_failures
            """, logger: logger)
        var claimed: [DueReceipt] = []
        for try await (keyID, appID, publicKey, receipt, environment, failures) in rows.decode((Data, String, Data, Data, String, Int).self) {
            claimed.append(
                DueReceipt(
                    keyID: Array(keyID), appID: appID, publicKey: Array(publicKey), receipt: Array(receipt),
                    development: environment == "development", failures: failures))
        }
        return claimed
    }

    /// Keeps what a trade found: the receipt's state, Apple's newer receipt and its risk metric (now),
    /// the failures in a row, and when to trade next (never, when nil).
    func record(
        _ keyID: [UInt8], state: State?, receipt: [UInt8]? = nil, riskMetric: Int? = nil, failures: Int, next: Date?
    ) async throws {
        let newReceipt = receipt.map { Data($0) }
        try await database.client.query(
            """
            UPDATE attested_keys SET receipt_state = coalesce(\(state?.rawValue), receipt_state),
                receipt = coalesce(\(newReceipt), receipt), risk_metric = coalesce(\(riskMetric), risk_metric),
                risk_at = CASE WHEN \(riskMetric)::integer IS NULL THEN risk_at ELSE now() END,
                receipt_failures = \(failures), receipt_redeem_after = \(next)
            WHERE key_id = \(Data(keyID))
            """, logger: logger)
    }

    /// Revokes `keyID` (and its refresh-token families) because its risk metric is above `maximum`,
    /// and audits it (`device.risk_revoke`, sent to webhooks as a revocation); false when it was not live.
    func revokeForRisk(_ keyID: [UInt8], appID: String, riskMetric: Int, maximum: Int) async throws -> Bool {
        let reason = "\(Self.riskReasonPrefix)\(riskMetric) above the policy's maxRiskMetric \(maximum)"
        return try await database.client.withTransaction(logger: logger) { connection in
            try await AttestedKeyRevocation.revoke(
                keyID, appID: appID, reason: reason, action: .deviceRiskRevoke, actor: "sesame",
                details: ["riskMetric": .integer(Int64(riskMetric)), "maxRiskMetric": .integer(Int64(maximum))], on: connection, logger: logger)
        }
    }

    /// Whether `keyID` was revoked for its risk metric.
    func revokedForRisk(_ keyID: [UInt8]) async throws -> Bool {
        let rows = try await database.client.query(
            "SELECT coalesce(revoked_reason, '') FROM attested_keys WHERE key_id = \(Data(keyID))", logger: logger)
        for try await reason in rows.decode(String.self) { return reason.hasPrefix(Self.riskReasonPrefix) }
        return false
    }
}
