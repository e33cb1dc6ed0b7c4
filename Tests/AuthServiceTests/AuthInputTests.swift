import AppAttestTesting
import Foundation
import HTTPTypes
import Testing

/// Hostile and malformed input: always a 4xx JSON error naming what is wrong, never a 500.
@Suite("Auth input validation", .timeLimit(.minutes(2)))
struct AuthInputTests {
    @Test("malformed attest and refresh bodies get 4xx JSON errors")
    func malformedBodies() async throws {
        try await AuthHarness.run { harness in
            let valid = try harness.attestBody(harness.attester.generateKey(), nonce: try await harness.challenge())
            func with(_ key: String, _ value: Any?) -> Data {
                var body = valid
                body[key] = value
                return try! JSONSerialization.data(withJSONObject: body)
            }
            let cases: [(String, String, Data, Int, String)] = [
                ("not JSON", "/v1/auth/attest", Data("{nope".utf8), 400, "invalid_body"),
                ("a JSON array", "/v1/auth/attest", Data("[]".utf8), 400, "invalid_body"),
                ("missing keyId", "/v1/auth/attest", with("keyId", nil), 400, "invalid_body"),
                ("keyId of the wrong type", "/v1/auth/attest", with("keyId", 5), 400, "invalid_body"),
                ("attestationObject not base64", "/v1/auth/attest", with("attestationObject", "%%%"), 400, "invalid_request"),
                ("empty attestationObject", "/v1/auth/attest", with("attestationObject", ""), 400, "invalid_request"),
                ("keyId of 16 bytes", "/v1/auth/attest", with("keyId", Data(count: 16).base64EncodedString()), 400, "invalid_request"),
                ("appVersion not a version", "/v1/auth/attest", with("appVersion", "two"), 400, "invalid_request"),
                ("attestation bytes that are not CBOR", "/v1/auth/attest", with("attestationObject", Data(count: 64).base64EncodedString()), 401, "attestation_invalid"),
                ("body over 64 KiB", "/v1/auth/attest", with("receipt", String(repeating: "a", count: 70_000)), 413, "payload_too_large"),
                ("refresh without a token", "/v1/auth/refresh", Data("{}".utf8), 400, "invalid_body"),
                ("assertion without clientData", "/v1/auth/refresh",
                 try JSONSerialization.data(withJSONObject: ["refreshToken": "x", "assertion": "AAAA"]), 401, "invalid_token"),
            ]
            for (name, path, body, status, code) in cases {
                let reply = try await harness.post(path, body: body)
                #expect(Int(reply.status.code) == status, "\(name): \(reply.status)")
                #expect(reply.errorCode == code, "\(name): \(reply.json)")
            }
        }
    }

    @Test("an assertion refresh with clientData that carries no challenge is refused with 400")
    func clientDataWithoutChallenge() async throws {
        try await AuthHarness.run { harness in
            let (_, attested) = try await harness.attestNewKey()
            let token = try #require(attested["refreshToken"])
            let noChallenge = try await harness.refresh(
                token, extra: ["assertion": "AAAA", "clientData": Data("{\"nonce\":1}".utf8).base64EncodedString()])
            #expect(noChallenge.status == .badRequest)
            #expect(noChallenge.errorCode == "invalid_request")
            let halfForm = try await harness.refresh(token, extra: ["assertion": "AAAA"])
            #expect(halfForm.status == .badRequest)
            // Neither spent the token.
            #expect(try await harness.refresh(token).status == .ok)
        }
    }
}
