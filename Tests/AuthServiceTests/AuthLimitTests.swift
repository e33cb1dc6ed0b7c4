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
