import Foundation
import HTTPTypes
import SesameDomain
import SesameTestSupport
import Testing

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
