import AppAttestTesting
import Foundation
import HTTPTypes
import PostgresNIO
import SesameDomain
import SesameTestSupport
import Testing

@testable import AuthService

/// The attestation ramp, auth's side: a challenge that names the app is told its ramp.
@Suite("The attestation ramp in the challenge", .timeLimit(.minutes(2)))
struct AttestationRampChallengeTests {
    @Test("a challenge naming the app carries its ramp; without a body, for an unknown app or without a ramp it carries none; a body that is not the app is 400")
    func rampInTheChallenge() async throws {
        try await AuthHarness.run(policy: AppPolicy(refreshRequiresAssertion: false, admitUnattested: true, attestationRamp: 2.5)) { harness in
            let app = ["teamId": AuthHarness.teamID, "bundleId": AuthHarness.bundleID]
            let told = try await harness.post("/v1/auth/challenge", app)
            #expect(told.status == .ok && told.json["attestationRamp"] as? Double == 2.5 && told["nonce"] != nil, "\(told.json)")
            let bare = try await harness.post("/v1/auth/challenge", body: Data())
            #expect(bare.status == .ok && bare.json["attestationRamp"] == nil && bare["nonce"] != nil)
            let unknown = try await harness.post("/v1/auth/challenge", ["teamId": "ZZZZZ99999", "bundleId": "com.nobody"])
            #expect(unknown.status == .ok && unknown.json["attestationRamp"] == nil)
            let garbage = try await harness.post("/v1/auth/challenge", body: Data("{\"teamId\": 7".utf8))
            #expect(garbage.status == .badRequest && garbage.errorCode == "invalid_body", "\(garbage.json)")
            // What the fuzz sent: an empty bundle id, an object for one.
            #expect(try await harness.post("/v1/auth/challenge", ["teamId": AuthHarness.teamID, "bundleId": ""]).status == .badRequest)
            #expect(try await harness.post("/v1/auth/challenge", ["teamId": AuthHarness.teamID, "bundleId": [:] as [String: Any]]).status == .badRequest)
            try await harness.setPolicy(AppPolicy(refreshRequiresAssertion: false))
            #expect(try await harness.post("/v1/auth/challenge", app).json["attestationRamp"] == nil)
        }
    }
}

/// The automatic attestation ramp, auth's side: what it counts, when it widens and when it holds.
@Suite("The automatic attestation ramp", .timeLimit(.minutes(2)))
struct AutomaticAttestationRampTests {
    static let automatic = AppPolicy(refreshRequiresAssertion: false, admitUnattested: true, attestationRamp: 1, attestationRampAutomatic: true)

    /// The app's counts over every hour: attested, refused, device failed, rate limited, unsupported, outside the ramp.
    static func counted(_ harness: AuthHarness) async throws -> [Int64] {
        let rows = try await harness.database.query(
            """
            SELECT coalesce(sum(attested), 0)::bigint, coalesce(sum(refused), 0)::bigint, coalesce(sum(device_failed), 0)::bigint,
                   coalesce(sum(rate_limited), 0)::bigint, coalesce(sum(unsupported), 0)::bigint, coalesce(sum(outside_ramp), 0)::bigint
            FROM attestation_outcomes WHERE app_id = \(AuthHarness.appID)
            """)
        for try await (a, r, d, l, u, o) in rows.decode((Int64, Int64, Int64, Int64, Int64, Int64).self) { return [a, r, d, l, u, o] }
        return []
    }

    /// The ramp's percentage, start and hold reason, if it has a row.
    static func ramp(_ harness: AuthHarness) async throws -> (percent: Double, startedFrom: Double, holdReason: String?)? {
        let rows = try await harness.database.query(
            "SELECT percent, started_from, hold_reason FROM attestation_ramps WHERE app_id = \(AuthHarness.appID)")
        for try await row in rows.decode((Double, Double, String?).self) { return row }
        return nil
    }

    static func told(_ harness: AuthHarness) async throws -> Double? {
        try await harness.post("/v1/auth/challenge", ["teamId": AuthHarness.teamID, "bundleId": AuthHarness.bundleID]).json["attestationRamp"] as? Double
    }

    /// A day of attempts an hour ago, and the ramp made due (last widened a day and an hour ago).
    static func pastDay(_ harness: AuthHarness, attested: Int, refused: Int, rateLimited: Int) async throws {
        try await harness.database.query(
            """
            INSERT INTO attestation_outcomes (app_id, hour, attested, refused, rate_limited)
            VALUES (\(AuthHarness.appID), date_trunc('hour', now()) - interval '1 hour', \(attested), \(refused), \(rateLimited))
            ON CONFLICT (app_id, hour) DO UPDATE SET attested = EXCLUDED.attested, refused = EXCLUDED.refused, rate_limited = EXCLUDED.rate_limited
            """)
        try await harness.database.query(
            "UPDATE attestation_ramps SET widened_at = now() - interval '25 hours' WHERE app_id = \(AuthHarness.appID)")
    }

    @Test("attests, refusals and devices' reports are counted per hour; a report spends its challenge; bad reports are refused")
    func counts() async throws {
        try await AuthHarness.run(policy: Self.automatic) { harness in
            #expect(try await harness.attestNewKey().1.status == .ok)
            let refused = try await harness.post(
                "/v1/auth/attest", try harness.attestBody(harness.attester.generateKey(), nonce: try await harness.challenge()) { $0.counter = 1 })
            #expect(refused.status == .unauthorized, "\(refused.json)")
            let nonce = Data(try await harness.challenge()).base64EncodedString()
            let report: [String: Any] = ["nonce": nonce, "teamId": AuthHarness.teamID, "bundleId": AuthHarness.bundleID, "reason": "serverUnavailable"]
            let reported = try await harness.post("/v1/auth/attestation-failure", report)
            #expect(reported.status == .noContent, "\(reported.json)")
            #expect(try await harness.post("/v1/auth/attestation-failure", report).errorCode == "invalid_challenge", "a challenge reports once")
            var failed = report
            failed["nonce"] = Data(try await harness.challenge()).base64EncodedString()
            failed["reason"] = "failed"
            #expect(try await harness.post("/v1/auth/attestation-failure", failed).status == .noContent)
            var unknown = report
            unknown["nonce"] = Data(try await harness.challenge()).base64EncodedString()
            unknown["bundleId"] = "com.example.nobody"
            #expect(try await harness.post("/v1/auth/attestation-failure", unknown).status == .notFound)
            unknown["bundleId"] = AuthHarness.bundleID
            unknown["reason"] = "bored"
            #expect(try await harness.post("/v1/auth/attestation-failure", unknown).status == .badRequest)
            for reason in ["unsupported", "outsideRamp"] {
                let unattested = try await harness.post(
                    "/v1/auth/unattested",
                    ["nonce": Data(try await harness.challenge()).base64EncodedString(), "teamId": AuthHarness.teamID, "bundleId": AuthHarness.bundleID,
                     "reason": reason])
                #expect(unattested.status == .ok, "\(unattested.json)")
            }
            try await eventually("the counts written") { try await Self.counted(harness) == [1, 1, 1, 1, 1, 1] }
            let (_, body) = try await harness.get("/metrics")
            let metrics = String(decoding: body, as: UTF8.self)
            for reason in ["rate_limited", "device_failed", "unsupported", "outside_ramp"] {
                #expect(metrics.contains(#"sesame_auth_attestation_reports_total{app="\#(AuthHarness.appID)",reason="\#(reason)"}"#), "\(reason)")
            }
        }
    }

    @Test("the ramp starts at the policy's value, doubles a day on at 95 % and over, holds below 95 % or when Apple's rate limit is reported, restarts when the policy moves its start")
    func widensAndHolds() async throws {
        try await AuthHarness.run(policy: Self.automatic) { harness in
            try await eventually("the ramp started") { try await Self.ramp(harness)?.percent == 1 }
            #expect(try await Self.told(harness) == 1)

            // 97 of 100 succeeded, 1 rate-limit report (under 1 % of 101 attempts): it doubles.
            try await Self.pastDay(harness, attested: 97, refused: 3, rateLimited: 0)
            try await eventually("widened to 2") { try await Self.ramp(harness)?.percent == 2 }
            try await eventually("challenges told 2") { try await Self.told(harness) == 2 }
            let audit = try await harness.database.query(
                "SELECT count(*)::int FROM audit_log WHERE app_id = \(AuthHarness.appID) AND action = 'attestation_ramp.widen'")
            for try await count in audit.decode(Int.self) { #expect(count == 1) }

            // Not due again for a day: nothing moves however good the day.
            try await harness.database.query(
                "UPDATE attestation_outcomes SET attested = 1000 WHERE app_id = \(AuthHarness.appID)")
            try await Task.sleep(for: .seconds(1))
            #expect(try await Self.ramp(harness)?.percent == 2)

            // Due, but 90 of 100: held, with the reason, and never narrowed.
            try await Self.pastDay(harness, attested: 90, refused: 10, rateLimited: 0)
            try await eventually("held for the success rate") { try await Self.ramp(harness)?.holdReason?.contains("95 %") == true }
            #expect(try await Self.ramp(harness)?.percent == 2)

            // Due, 99 % succeeded, but Apple's rate limit reported for 2 %: held.
            try await Self.pastDay(harness, attested: 500, refused: 0, rateLimited: 10)
            try await eventually("held for the rate limit") { try await Self.ramp(harness)?.holdReason?.contains("rate limit") == true }
            #expect(try await Self.ramp(harness)?.percent == 2)

            // Too few attempts to judge: held.
            try await Self.pastDay(harness, attested: 5, refused: 0, rateLimited: 0)
            try await eventually("held for too few") { try await Self.ramp(harness)?.holdReason?.contains("after 20") == true }

            // A new start: challenges say it at once, the ramp restarts there.
            var moved = Self.automatic
            moved.attestationRamp = 40
            try await harness.setPolicy(moved)
            #expect(try await Self.told(harness) == 40)
            try await eventually("restarted at 40") { try await Self.ramp(harness).map { $0.percent == 40 && $0.startedFrom == 40 } == true }
            // 40 doubles to 80, then to 100 (not 160), and stays there.
            for expected in [80.0, 100] {
                try await Self.pastDay(harness, attested: 100, refused: 0, rateLimited: 0)
                try await eventually("widened to \(expected)") { try await Self.ramp(harness)?.percent == expected }
            }
            try await Self.pastDay(harness, attested: 100, refused: 0, rateLimited: 0)
            try await Task.sleep(for: .seconds(1))
            #expect(try await Self.ramp(harness)?.percent == 100)

            // Back to a ramp by hand: the automatic ramp is forgotten, the policy's value is told.
            try await harness.setPolicy(AppPolicy(refreshRequiresAssertion: false, admitUnattested: true, attestationRamp: 10))
            try await eventually("forgotten") { try await Self.ramp(harness) == nil }
            #expect(try await Self.told(harness) == 10)
        }
    }

    @Test("the rule: due after a day, at least 20 attempts, 95 % success, rate-limit reports under 1 %; it doubles up to 100 and never narrows")
    func rule() {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let dayOn = start.addingTimeInterval(86400)
        let good = AttestationAttempts(attested: 95, refused: 5)
        #expect(AttestationRampRule.decide(percent: 1, widenedAt: start, now: start.addingTimeInterval(86399), day: good) == .wait)
        #expect(AttestationRampRule.decide(percent: 1, widenedAt: start, now: dayOn, day: good) == .widen(to: 2))
        #expect(AttestationRampRule.decide(percent: 60, widenedAt: start, now: dayOn, day: good) == .widen(to: 100))
        #expect(AttestationRampRule.decide(percent: 100, widenedAt: start, now: dayOn, day: good) == .wait)
        guard case .hold = AttestationRampRule.decide(percent: 1, widenedAt: start, now: dayOn, day: .init(attested: 94, refused: 6)) else {
            Issue.record("94 % holds")
            return
        }
        guard case .hold = AttestationRampRule.decide(percent: 1, widenedAt: start, now: dayOn, day: .init(attested: 19)) else {
            Issue.record("19 attempts hold")
            return
        }
        guard case .hold = AttestationRampRule.decide(percent: 1, widenedAt: start, now: dayOn, day: .init(attested: 99, rateLimited: 1)) else {
            Issue.record("a rate-limit report for 1 % holds")
            return
        }
        #expect(AttestationRampRule.decide(percent: 1, widenedAt: start, now: dayOn, day: .init(attested: 199, rateLimited: 1)) == .widen(to: 2))
        // Device failures count as attempts that did not succeed.
        guard case .hold = AttestationRampRule.decide(percent: 1, widenedAt: start, now: dayOn, day: .init(attested: 90, deviceFailed: 10)) else {
            Issue.record("device failures count against the rate")
            return
        }
    }
}
