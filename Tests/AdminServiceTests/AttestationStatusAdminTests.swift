import Foundation
import HTTPTypes
import PostgresNIO
import SesameTestSupport
import Testing

/// `GET /v1/admin/attestation`: the ramp (the policy's, or where auth's automatic ramp stands) and
/// auth's hourly counts with their success rate; and the policy's `attestationRampAutomatic`.
@Suite("Admin: the attestation ramp and its counts", .timeLimit(.minutes(2)))
struct AttestationStatusAdminTests {
    @Test("attestationRampAutomatic needs a ramp above 0 and below 100 to start from")
    func automaticNeedsAStart() async throws {
        try await AdminHarness.run { harness in
            let credential = try await harness.createKey()
            for bad: [String: Any] in [
                ["attestationRampAutomatic": true], ["attestationRampAutomatic": true, "attestationRamp": 100],
                ["attestationRampAutomatic": true, "attestationRamp": 0, "admitUnattested": true],
            ] {
                let refused = try await harness.call(.put, "/v1/admin/policy", credential: credential, json: bad)
                #expect(refused.status == .badRequest && refused.json.description.contains("attestationRampAutomatic"), "\(bad): \(refused.json)")
            }
            let set = try await harness.call(
                .put, "/v1/admin/policy", credential: credential, json: ["attestationRampAutomatic": true, "attestationRamp": 1, "admitUnattested": true])
            #expect(set.status == .ok && (set["changed"] as? [String]) == ["admitUnattested", "attestationRamp", "attestationRampAutomatic"], "\(set.json)")
        }
    }

    @Test("the ramp as the policy states it or as auth moved it, the last day's counts and success rate, hour by hour; nothing for another app")
    func status() async throws {
        try await AdminHarness.run { harness in
            let credential = try await harness.createKey()
            let empty = try await harness.call(.get, "/v1/admin/attestation", credential: credential)
            #expect(empty.status == .ok, "\(empty.json)")
            let emptyRamp = try #require(empty["ramp"] as? [String: Any])
            #expect(emptyRamp["automatic"] as? Bool == false && emptyRamp["percent"] == nil)
            #expect((empty["lastDay"] as? [String: Any])?["attested"] as? Int == 0 && (empty["hours"] as? [Any])?.isEmpty == true)

            _ = try await harness.call(
                .put, "/v1/admin/policy", credential: credential, json: ["attestationRampAutomatic": true, "attestationRamp": 1, "admitUnattested": true])
            // Before auth starts it: the policy's start.
            let unstarted = try #require(try await harness.call(.get, "/v1/admin/attestation", credential: credential)["ramp"] as? [String: Any])
            #expect(unstarted["percent"] as? Double == 1 && unstarted["automatic"] as? Bool == true && unstarted["widenedAt"] == nil)

            // As auth leaves them: the ramp widened to 4, held since; two hours of counts, one older than a day.
            try await harness.database.query(
                """
                INSERT INTO attestation_ramps (app_id, percent, started_from, widened_at, checked_at, hold_reason)
                VALUES (\(AdminHarness.appID), 4, 1, now() - interval '2 days', now(), 'held for a test')
                """)
            try await harness.database.query(
                """
                INSERT INTO attestation_outcomes (app_id, hour, attested, refused, device_failed, rate_limited, unsupported, outside_ramp) VALUES
                (\(AdminHarness.appID), date_trunc('hour', now()) - interval '2 hours', 90, 4, 3, 3, 7, 50),
                (\(AdminHarness.appID), date_trunc('hour', now()), 10, 0, 0, 0, 1, 5),
                (\(AdminHarness.appID), date_trunc('hour', now()) - interval '3 days', 1000, 1000, 0, 0, 0, 0)
                """)
            let status = try await harness.call(.get, "/v1/admin/attestation", credential: credential)
            let ramp = try #require(status["ramp"] as? [String: Any])
            #expect(ramp["percent"] as? Double == 4 && ramp["startedFrom"] as? Double == 1 && ramp["holdReason"] as? String == "held for a test")
            let day = try #require(status["lastDay"] as? [String: Any])
            #expect(day["attested"] as? Int == 100 && day["refused"] as? Int == 4 && day["deviceFailed"] as? Int == 3)
            #expect(day["rateLimited"] as? Int == 3 && day["unsupported"] as? Int == 8 && day["outsideRamp"] as? Int == 55)
            #expect(abs((day["successRate"] as? Double ?? 0) - 100.0 / 110.0) < 1e-9, "\(day)")
            let hours = try #require(status["hours"] as? [[String: Any]])
            #expect(hours.count == 2 && (hours.first?["counts"] as? [String: Any])?["attested"] as? Int == 90, "oldest first, the last day only")

            // A ramp counted from another start is stale: the policy's start is shown.
            _ = try await harness.call(
                .put, "/v1/admin/policy", credential: credential, json: ["attestationRampAutomatic": true, "attestationRamp": 5, "admitUnattested": true])
            let moved = try #require(try await harness.call(.get, "/v1/admin/attestation", credential: credential)["ramp"] as? [String: Any])
            #expect(moved["percent"] as? Double == 5 && moved["holdReason"] == nil)

            let other = try await harness.createKey(teamID: "OTHERTEAM1", bundleID: "com.example.other")
            let theirs = try await harness.call(.get, "/v1/admin/attestation", credential: other)
            #expect((theirs["lastDay"] as? [String: Any])?["attested"] as? Int == 0)
        }
    }
}
