import AppAttestTesting
import AppleFake
import Crypto
import Foundation
import HTTPTypes
import PostgresNIO
import SesameDomain
import SesameTestSupport
import Synchronization
import Testing

/// The receipt's risk metric (Apple's "Assessing fraud risk"), auth's side: each attested key's
/// receipt verified and traded with Apple (a fake written from its documentation, signing with a test
/// chain auth trusts as a development extra root) off the attest path; the risk kept; a key above the
/// policy's `maxRiskMetric` revoked; Apple's failures retried later.
@Suite("Receipts and the risk metric", .timeLimit(.minutes(2)))
struct ReceiptRiskTests {
    /// A key's receipt columns.
    struct Stored: Sendable {
        let state: String
        let risk: Int?
        let failures: Int
        let nextInSeconds: Double?
        let revoked: Bool
        let receipt: Data
    }

    static func stored(_ harness: AuthHarness, _ keyID: [UInt8]) async throws -> Stored? {
        let rows = try await harness.database.query(
            """
            SELECT receipt_state, risk_metric, receipt_failures, extract(epoch FROM receipt_redeem_after - now())::float8, revoked_at IS NOT NULL, receipt
            FROM attested_keys WHERE key_id = \(Data(keyID))
            """)
        for try await (state, risk, failures, next, revoked, receipt) in rows.decode((String, Int?, Int, Double?, Bool, Data).self) {
            return Stored(state: state, risk: risk, failures: failures, nextInSeconds: next, revoked: revoked, receipt: receipt)
        }
        return nil
    }

    @Test("attest, then the receipt is verified and traded: the risk metric is kept, the newer receipt too, the next trade a day on")
    func riskRecorded() async throws {
        let receipts = SoftwareReceiptAuthority()
        try await DeviceBanTests.withApple(policy: AppPolicy(refreshRequiresAssertion: false), receipts: receipts) { harness, apple in
            // Apple's answer is set before the attest: the trade follows it within a round.
            let key = harness.attester.generateKey()
            apple.riskMetrics.withLock { $0[key.publicKey.x963Representation] = 3 }
            let attested = try await harness.post("/v1/auth/attest", try harness.attestBody(key, nonce: try await harness.challenge()))
            #expect(attested.status == .ok, "\(attested.json)")
            try await eventually("the risk metric recorded") { try await Self.stored(harness, key.keyId)?.risk != nil }
            let stored = try #require(try await Self.stored(harness, key.keyId))
            #expect(stored.state == "verified" && stored.risk == 3 && stored.failures == 0 && !stored.revoked)
            #expect(receipts.subject(of: Array(stored.receipt)) != nil, "the newer receipt is kept")
            #expect((stored.nextInSeconds ?? 0) > 86000, "the next trade is a day on: \(String(describing: stored.nextInSeconds))")
            #expect(apple.trades.withLock { $0 } == 1)
            let (_, body) = try await harness.get("/metrics")
            let metrics = String(decoding: body, as: UTF8.self)
            #expect(metrics.contains("sesame_auth_risk_metric") && metrics.contains(#"sesame_auth_receipts_total{app="\#(AuthHarness.appID)",result="redeemed"}"#))
        }
    }

    @Test("a key whose risk metric is above maxRiskMetric is revoked and audited; its refresh says risk_too_high; a key below it is not")
    func highRiskRevoked() async throws {
        let receipts = SoftwareReceiptAuthority()
        let policy = AppPolicy(refreshRequiresAssertion: false, maxRiskMetric: 5)
        try await DeviceBanTests.withApple(policy: policy, receipts: receipts) { harness, apple in
            let farmed = harness.attester.generateKey(), ordinary = harness.attester.generateKey()
            apple.riskMetrics.withLock {
                $0[farmed.publicKey.x963Representation] = 40
                $0[ordinary.publicKey.x963Representation] = 2
            }
            let farmedReply = try await harness.post("/v1/auth/attest", try harness.attestBody(farmed, nonce: try await harness.challenge()))
            #expect(try await harness.post("/v1/auth/attest", try harness.attestBody(ordinary, nonce: try await harness.challenge())).status == .ok)
            try await eventually("both keys traded") {
                let farmedRisk = try await Self.stored(harness, farmed.keyId)?.risk
                let ordinaryRisk = try await Self.stored(harness, ordinary.keyId)?.risk
                return farmedRisk != nil && ordinaryRisk != nil
            }
            #expect(try await Self.stored(harness, farmed.keyId)?.revoked == true)
            #expect(try await Self.stored(harness, ordinary.keyId)?.revoked == false)
            let refused = try await harness.refresh(try #require(farmedReply["refreshToken"]))
            #expect(refused.status == .forbidden && refused.errorCode == "risk_too_high", "\(refused.json)")
            let rows = try await harness.database.query("SELECT count(*) FROM audit_log WHERE action = 'device.risk_revoke'")
            for try await count in rows.decode(Int.self) { #expect(count == 1) }
        }
    }

    @Test("Apple down: the attest succeeds and the trade is tried again later (1 minute, then 2 …); back, the risk is kept")
    func appleDownRetried() async throws {
        let receipts = SoftwareReceiptAuthority()
        try await DeviceBanTests.withApple(policy: AppPolicy(refreshRequiresAssertion: false), receipts: receipts) { harness, apple in
            apple.forcedStatus.withLock { $0 = .serviceUnavailable }
            let (key, attested) = try await harness.attestNewKey()
            #expect(attested.status == .ok)
            try await eventually("a failed trade recorded") { try await Self.stored(harness, key.keyId)?.failures == 1 }
            let failed = try #require(try await Self.stored(harness, key.keyId))
            #expect(failed.state == "verified" && failed.risk == nil && (30...90).contains(failed.nextInSeconds ?? 0), "\(failed)")
            apple.forcedStatus.withLock { $0 = nil }
            // The minute passes.
            try await harness.database.query("UPDATE attested_keys SET receipt_redeem_after = now() WHERE key_id = \(Data(key.keyId))")
            try await eventually("traded once Apple is back") { try await Self.stored(harness, key.keyId)?.risk == 1 }
            #expect(try await Self.stored(harness, key.keyId)?.failures == 0)
        }
    }

    @Test("a receipt that does not verify is kept as invalid, never traded; without the app's DeviceCheck key nothing is traded")
    func invalidReceipt() async throws {
        // No receipt authority: the attester's receipts are placeholders no chain signs.
        try await DeviceBanTests.withApple(policy: AppPolicy(refreshRequiresAssertion: false)) { harness, apple in
            let (key, attested) = try await harness.attestNewKey()
            #expect(attested.status == .ok)
            try await eventually("the receipt judged") { try await Self.stored(harness, key.keyId)?.state == "invalid" }
            let stored = try #require(try await Self.stored(harness, key.keyId))
            #expect(stored.nextInSeconds == nil && stored.risk == nil)
            #expect(apple.calls.withLock { !$0.contains("v1/attestationData") })
        }
        try await AuthHarness.run(receipts: SoftwareReceiptAuthority()) { harness in
            let (key, _) = try await harness.attestNewKey()
            try await Task.sleep(for: .seconds(1))
            #expect(try await Self.stored(harness, key.keyId)?.state == "unchecked", "an app without a DeviceCheck key has its receipts left alone")
        }
    }
}
