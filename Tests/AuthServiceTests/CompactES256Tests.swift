import Crypto
import Foundation
import JWTKit
import SesameDomain
import Testing

@testable import SesameTokens

/// Sesame's own ES256 token codec against jwt-kit's, both ways (tokens issued before the codec
/// changed must keep verifying, and every verifier built on jwt-kit must accept the new ones), and
/// the tokens it must refuse.
@Suite("Compact ES256 tokens")
struct CompactES256Tests {
    let key = P256.Signing.PrivateKey()
    let kid = "test-kid"

    func claims(expiresIn seconds: TimeInterval = 600) -> AccessTokenClaims {
        let now = Date()
        return AccessTokenClaims(
            subject: .init(value: "key-1"), appID: "TEAM.com.example", environment: "production", appVersion: "2.1.3",
            issuedAt: .init(value: now), expiration: .init(value: now.addingTimeInterval(seconds)), id: .init(value: UUID().uuidString),
            type: AccessTokenClaims.typeValue, audience: .init(value: AccessTokenClaims.audienceValue), tier: .attested)
    }

    func signed(_ claims: AccessTokenClaims) throws -> String {
        try CompactES256.sign(claims, headerSegment: try CompactES256.headerSegment(kid: kid, typ: AccessTokenClaims.headerType), key: key)
    }

    /// `token` with its header replaced by `header` (JSON), payload and signature kept.
    func withHeader(_ header: String, _ token: String) -> String {
        let parts = token.split(separator: ".")
        return Base64.urlEncode(Array(header.utf8)) + "." + parts[1] + "." + parts[2]
    }

    @Test("jwt-kit verifies a token Sesame signs, with its kid and typ")
    func jwtKitVerifiesOurs() async throws {
        let original = claims()
        let token = try signed(original)
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PublicKey(backing: key.publicKey), kid: JWKIdentifier(string: kid))
        let verified = try await keys.verify(token, as: AccessTokenClaims.self)
        #expect(verified.subject == original.subject)
        #expect(verified.appVersion == "2.1.3")
        #expect(Int(verified.expiration.value.timeIntervalSince1970) == Int(original.expiration.value.timeIntervalSince1970))
        let header = try DefaultJWTParser().parse(Array(token.utf8), as: AccessTokenClaims.self).header
        #expect(header.kid == kid)
        #expect(header.typ == AccessTokenClaims.headerType)
        #expect(header.alg == "ES256")
    }

    @Test("Sesame verifies a token jwt-kit signed (tokens issued before the codec changed)")
    func oursVerifiesJWTKit() async throws {
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(backing: key), kid: JWKIdentifier(string: kid))
        var header = JWTHeader()
        header.typ = AccessTokenClaims.headerType
        let original = claims()
        let token = try await keys.sign(original, kid: JWKIdentifier(string: kid), header: header)
        let parsed = try CompactES256.parse(token)
        #expect(parsed.header.kid == kid)
        #expect(CompactES256.isSigned(parsed, by: key.publicKey))
        let decoded = try CompactES256.claims(of: parsed, as: AccessTokenClaims.self)
        #expect(decoded.subject == original.subject)
        try await decoded.verify(using: ES256Verifier(key: key.publicKey))
    }

    @Test("refused: another alg, a critical extension, a broken shape or encoding")
    func malformedRefused() throws {
        let token = try signed(claims())
        for header in [#"{"alg":"none","kid":"test-kid"}"#, #"{"alg":"HS256","kid":"test-kid"}"#, #"{"kid":"test-kid"}"#, "[]"] {
            #expect(throws: CompactES256.Malformed.self) { try CompactES256.parse(withHeader(header, token)) }
        }
        #expect(throws: CompactES256.Malformed.self) {
            try CompactES256.parse(withHeader(#"{"alg":"ES256","kid":"test-kid","crit":["exp"],"exp":1}"#, token))
        }
        let parts = token.split(separator: ".").map(String.init)
        for broken in [
            parts[0] + "." + parts[1], token + ".", token + "." + parts[2], parts[0] + "." + parts[1] + "=." + parts[2],
            parts[0] + ".+/+/." + parts[2], "",
        ] {
            #expect(throws: CompactES256.Malformed.self) { try CompactES256.parse(broken) }
        }
    }

    @Test("refused: a changed payload, another key's signature, a signature of the wrong length")
    func signatureRefused() throws {
        let token = try signed(claims())
        let parts = token.split(separator: ".").map(String.init)
        var other = claims()
        other.appID = "OTHER.com.example"
        let forged = parts[0] + "." + (try signed(other)).split(separator: ".")[1] + "." + parts[2]
        #expect(!CompactES256.isSigned(try CompactES256.parse(forged), by: key.publicKey))
        #expect(!CompactES256.isSigned(try CompactES256.parse(token), by: P256.Signing.PrivateKey().publicKey))
        let short = parts[0] + "." + parts[1] + "." + Base64.urlEncode([UInt8](repeating: 1, count: 63))
        #expect(!CompactES256.isSigned(try CompactES256.parse(short), by: key.publicKey))
        #expect(CompactES256.isSigned(try CompactES256.parse(token), by: key.publicKey))
    }
}
