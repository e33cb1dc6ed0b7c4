import AppAttestTesting
import Foundation
import HTTPTypes
import Testing

/// Per-client limits answer 429 with Retry-After, per address as the gateway forwards it.
@Suite("Auth rate limits", .timeLimit(.minutes(2)))
struct AuthLimitTests {
    @Test("a challenge flood from one address gets 429 with Retry-After; another address is unaffected")
    func challengeFlood() async throws {
        try await AuthHarness.run { harness in
            var limited: AuthHarness.Reply?
            for _ in 0..<300 {
                let reply = try await harness.post("/v1/auth/challenge", [:], from: "198.51.100.7")
                if reply.status == .tooManyRequests {
                    limited = reply
                    break
                }
                #expect(reply.status == .ok)
            }
            let refused = try #require(limited, "300 challenges from one address were all served")
            #expect(refused.errorCode == "rate_limited")
            #expect(Int(refused.headers[.retryAfter] ?? "") ?? 0 >= 1)
            #expect(try await harness.post("/v1/auth/challenge", [:], from: "198.51.100.8").status == .ok)
        }
    }

    @Test("the per-app admission budget is spent only by attests that consumed a real challenge")
    func admissionAfterProof() async throws {
        try await AuthHarness.run(admissionRate: 1) { harness in
            // An attacker with no challenges, from many addresses: refused for the challenge, never
            // rate limited, and the app's budget (2 at once) is untouched.
            for index in 0..<20 {
                let key = harness.attester.generateKey()
                let forged = try await harness.post(
                    "/v1/auth/attest", try harness.attestBody(key, nonce: (0..<32).map { _ in UInt8.random(in: 0...255) }), from: "198.51.100.\(index)")
                #expect(forged.errorCode == "invalid_challenge")
            }
            let (_, genuine) = try await harness.attestNewKey()
            #expect(genuine.status == .ok)
        }
    }

    @Test("made-up attestations over real challenges, from many addresses, spend nothing of the app's admission budget: refused for what they are, never 429, and a genuine install is admitted")
    func admissionAfterVerification() async throws {
        try await AuthHarness.run(admissionRate: 1) { harness in
            // The budget is 2 at once and 1 a second: twenty made-up attestations would spend it ten times over.
            for index in 0..<20 {
                var body = try harness.attestBody(harness.attester.generateKey(), nonce: try await harness.challenge())
                body["attestationObject"] = Data((0..<300).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
                let forged = try await harness.post("/v1/auth/attest", body, from: "198.51.100.\(index)")
                #expect(forged.status == .unauthorized && forged.errorCode == "attestation_invalid", "\(index): \(forged.json)")
            }
            for _ in 0..<2 {
                let (_, genuine) = try await harness.attestNewKey()
                #expect(genuine.status == .ok, "\(genuine.json)")
            }
        }
    }

    @Test("the admission budget is one across replicas: two auth instances admit what one would")
    func admissionSharedAcrossReplicas() async throws {
        // 1 per second, 2 at once. Sixteen attests sent at once, half to each replica: one budget
        // admits 2, plus one per second the burst takes; one budget per replica would admit twice that.
        try await AuthHarness.run(admissionRate: 1) { first in
            try await first.withSecondReplica { second in
                var bodies: [[String: Any]] = []
                for _ in 0..<16 { bodies.append(try first.attestBody(first.attester.generateKey(), nonce: try await first.challenge())) }
                let started = ContinuousClock.now
                let replies = try await withThrowingTaskGroup(of: AuthHarness.Reply.self) { group in
                    for (index, body) in bodies.enumerated() {
                        let (replica, sendable) = (index.isMultiple(of: 2) ? first : second, UncheckedBody(json: body))
                        group.addTask { try await replica.post("/v1/auth/attest", sendable.json, from: "198.51.100.\(index)") }
                    }
                    return try await group.reduce(into: [AuthHarness.Reply]()) { $0.append($1) }
                }
                let seconds = Int((ContinuousClock.now - started).components.seconds) + 1
                let admitted = replies.filter { $0.status == .ok }.count
                #expect(admitted >= 2 && admitted <= 2 + seconds, "admitted \(admitted) of 16 in about \(seconds) s")
                let refused = try #require(replies.first { $0.status == .tooManyRequests })
                #expect(refused.errorCode == "rate_limited")
                #expect(Int(refused.headers[.retryAfter] ?? "") ?? 0 >= 1)
            }
        }
    }

    /// A JSON body handed to a child task (JSONSerialization's dictionaries are not `Sendable`).
    private struct UncheckedBody: @unchecked Sendable {
        let json: [String: Any]
    }

    @Test("refresh is limited per attested key: a flood with one key's token gets 429 before touching the family")
    func refreshPerKey() async throws {
        try await AuthHarness.run { harness in
            let (_, attested) = try await harness.attestNewKey()
            let stale = try #require(attested["refreshToken"])
            var codes: [String] = []
            for index in 0..<15 {
                codes.append(try await harness.refresh(stale, from: "198.51.100.\(index)").errorCode ?? "ok")
            }
            #expect(codes.contains("rate_limited"))
            #expect(codes.first == "ok")
        }
    }
}
