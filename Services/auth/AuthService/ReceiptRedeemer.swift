import AppAttest
import Foundation
import Logging
import Metrics
import ServiceLifecycle
import SesameApple
import SesameDomain
import SesameStorage

/// Trades each attested key's receipt with Apple for one carrying the risk metric (Apple's "Assessing
/// fraud risk"), off the attest path: every `interval` (`SESAME_RECEIPT_REDEMPTION_INTERVAL`), up to `batch` due keys of apps with a
/// DeviceCheck key, one call to Apple at a time (each bounded by the outbound client's 5 s). A key is
/// due at attest, then a day after each trade (spread over an hour, and never before the receipt's
/// `notBefore`, as Apple's rate limit asks); a failed call is retried after 1, 2, 4 … minutes, at most a
/// day apart. A receipt that does not verify is kept as `invalid`, never traded and never trusted. A
/// key whose risk metric is above the policy's `maxRiskMetric` is revoked.
struct ReceiptRedeemer: Service {
    let redemptions: ReceiptRedemptions
    let apps: AppDirectory
    let keys: DeviceCheckKeys
    let apple: AppAttestDataClient
    let verifier: AttestationReceiptVerifier
    let interval: Duration
    let logger: Logger

    /// Keys looked at in one round.
    static let batch = 20
    /// Apple: a receipt may be traded about once a day.
    static let period: TimeInterval = 86400
    /// Trades are spread over this much after they are due, so a burst of attests is not a burst of calls.
    static let spread: TimeInterval = 3600
    /// How old a receipt Apple just gave may be (Apple: five minutes).
    static let freshness: TimeInterval = 300

    func run() async throws {
        // Bounded: Apple's calls have their own 5 s, a whole round at most a minute.
        await runPeriodicRounds(every: interval, bound: .seconds(60), named: "receipt", logger: logger) { [self] in _ = try await round() }
    }

    /// One round; returns how many keys it looked at.
    func round() async throws -> Int {
        let due = try await redemptions.claim(limit: Self.batch)
        for receipt in due { try await redeem(receipt) }
        return due.count
    }

    /// Verifies the key's receipt, trades it with Apple, and keeps what came of it.
    func redeem(_ due: DueReceipt, now: Date = Date()) async throws {
        let current: AttestationReceipt
        do {
            current = try await verifier.verify(due.receipt, appID: due.appID, publicKey: due.publicKey, at: now)
        } catch {
            logger.warning("a key's receipt did not verify: kept as invalid, never trusted", metadata: ["app": "\(due.appID)", "step": "\(error.step.rawValue)"])
            ReceiptMetrics.count(appID: due.appID, "invalid")
            try await redemptions.record(due.keyID, state: .invalid, failures: due.failures, next: nil)
            return
        }
        if let notBefore = current.notBefore, notBefore > now {
            try await redemptions.record(due.keyID, state: .verified, failures: 0, next: notBefore.addingTimeInterval(.random(in: 0..<Self.spread)))
            return
        }
        // The app's key was removed since the claim: look again in an hour.
        guard let key = try await keys.key(appID: due.appID) else {
            try await redemptions.record(due.keyID, state: .verified, failures: due.failures, next: now.addingTimeInterval(3600))
            return
        }
        let answer: AppAttestDataClient.Answer
        do {
            answer = try await apple.redeem(due.receipt, key: key, development: due.development)
        } catch .receiptRefused {
            logger.warning("Apple refused a key's receipt: no more trades for it", metadata: ["app": "\(due.appID)"])
            ReceiptMetrics.count(appID: due.appID, "refused")
            try await redemptions.record(due.keyID, state: .verified, failures: due.failures + 1, next: nil)
            return
        } catch {
            try await failed(due, "\(error)", now: now)
            return
        }
        switch answer {
        case .notModified:
            ReceiptMetrics.count(appID: due.appID, "not_modified")
            try await redemptions.record(due.keyID, state: .verified, failures: 0, next: nextTrade(after: now, notBefore: nil))
        case .receipt(let bytes):
            let fresh: AttestationReceipt
            do {
                fresh = try await verifier.verify(bytes, appID: due.appID, publicKey: due.publicKey, at: now, maxAge: Self.freshness)
            } catch {
                try await failed(due, "its receipt did not verify (\(error))", now: now)
                return
            }
            guard fresh.kind == .receipt, let risk = fresh.riskMetric else {
                try await failed(due, "its receipt carries no risk metric", now: now)
                return
            }
            ReceiptMetrics.count(appID: due.appID, "redeemed")
            ReceiptMetrics.record(risk: risk, appID: due.appID)
            try await redemptions.record(
                due.keyID, state: .verified, receipt: bytes, riskMetric: risk, failures: 0, next: nextTrade(after: now, notBefore: fresh.notBefore))
            if let maximum = try await apps.app(appID: due.appID)?.policy.maxRiskMetric, risk > maximum,
                try await redemptions.revokeForRisk(due.keyID, appID: due.appID, riskMetric: risk, maximum: maximum)
            {
                logger.info("a key above the app's maxRiskMetric was revoked", metadata: ["app": "\(due.appID)", "risk": "\(risk)"])
            }
        }
    }

    /// A failed trade: tried again after 1, 2, 4 … minutes, at most a day apart.
    private func failed(_ due: DueReceipt, _ why: String, now: Date) async throws {
        let failures = due.failures + 1
        logger.info("a receipt trade failed; tried again later", metadata: ["app": "\(due.appID)", "failures": "\(failures)", "reason": "\(why)"])
        ReceiptMetrics.count(appID: due.appID, "failed")
        let backoff = retryDelay(afterFailures: failures, cap: Self.period)
        try await redemptions.record(due.keyID, state: .verified, failures: failures, next: now.addingTimeInterval(backoff))
    }

    /// A day after `now` (or at the receipt's `notBefore`, if later), spread over an hour.
    private func nextTrade(after now: Date, notBefore: Date?) -> Date {
        max(now.addingTimeInterval(Self.period), notBefore ?? now).addingTimeInterval(.random(in: 0..<Self.spread))
    }
}

/// `sesame_auth_receipts_total{app, result}` (`redeemed`, `not_modified`, `invalid`, `refused`,
/// `failed`) and the histogram `sesame_auth_risk_metric{app}`: the risk metrics Apple reported.
enum ReceiptMetrics {
    private static let counters = BoundedMemo<String, Counter>()
    private static let recorders = BoundedMemo<String, Recorder>()

    static func count(appID: String, _ result: String) {
        counters.value(for: result + " " + appID) { _ in
            Counter(label: "sesame_auth_receipts_total", dimensions: [("app", appID), ("result", result)])
        }.increment()
    }

    static func record(risk: Int, appID: String) {
        recorders.value(for: appID) { _ in Recorder(label: "sesame_auth_risk_metric", dimensions: [("app", appID)], aggregate: true) }
            .record(risk)
    }
}
