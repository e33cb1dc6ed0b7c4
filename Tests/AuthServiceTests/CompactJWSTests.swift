import Crypto
import Foundation
import JWTKit
import SesameDomain
import Testing

@testable import SesameTokens

/// Sesame's own token codec against jwt-kit's, both ways (tokens issued before the codec changed
/// must keep verifying, and every verifier built on jwt-kit must accept the new ones), and the
/// tokens it must refuse.
@Suite("Compact JWS tokens")
struct CompactJWSTests {
    let key = P256.Signing.PrivateKey()
    let kid = "test-kid"

    @Test("jwt-kit's key collection is still an actor, which CompactJWS avoids (docs/upstream/jwt-kit-key-collection-actor.md)")
    func keyCollectionIsStillAnActor() {
        func isActor(_ type: Any.Type) -> Bool { type is any Actor.Type }
        #expect(
            isActor(JWTKeyCollection.self),
            "JWTKeyCollection is no longer an actor: measure jwt-kit in place of CompactJWS (docs/upstream/jwt-kit-key-collection-actor.md)")
    }

    func claims(expiresIn seconds: TimeInterval = 600) -> AccessTokenClaims {
        let now = Date()
        return AccessTokenClaims(
            subject: .init(value: "key-1"), appID: "TEAM.com.example", environment: "production", appVersion: "2.1.3",
            issuedAt: .init(value: now), expiration: .init(value: now.addingTimeInterval(seconds)), id: .init(value: UUID().uuidString),
            type: AccessTokenClaims.typeValue, audience: .init(value: AccessTokenClaims.audienceValue), tier: .attested)
    }

    func signed(_ claims: AccessTokenClaims) throws -> String {
        try CompactJWS.sign(claims, headerSegment: try CompactJWS.headerSegment(.es256, kid: kid, typ: AccessTokenClaims.headerType), key: key)
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
        let parsed = try CompactJWS.parse(token, accepting: [.es256])
        #expect(parsed.header.kid == kid)
        #expect(CompactJWS.isSigned(parsed, by: .es256(key.publicKey)))
        let decoded = try CompactJWS.claims(of: parsed, as: AccessTokenClaims.self)
        #expect(decoded.subject == original.subject)
        try await decoded.verify(using: JWSVerifier(key: .es256(key.publicKey)))
    }

    @Test("refused: another alg, a critical extension, a broken shape or encoding")
    func malformedRefused() throws {
        let token = try signed(claims())
        for header in [#"{"alg":"none","kid":"test-kid"}"#, #"{"alg":"HS256","kid":"test-kid"}"#, #"{"kid":"test-kid"}"#, "[]"] {
            #expect(throws: CompactJWS.Malformed.self) { try CompactJWS.parse(withHeader(header, token), accepting: [.es256]) }
        }
        #expect(throws: CompactJWS.Malformed.self) {
            try CompactJWS.parse(withHeader(#"{"alg":"ES256","kid":"test-kid","crit":["exp"],"exp":1}"#, token), accepting: [.es256])
        }
        let parts = token.split(separator: ".").map(String.init)
        for broken in [
            parts[0] + "." + parts[1], token + ".", token + "." + parts[2], parts[0] + "." + parts[1] + "=." + parts[2],
            parts[0] + ".+/+/." + parts[2], "",
        ] {
            #expect(throws: CompactJWS.Malformed.self) { try CompactJWS.parse(broken, accepting: [.es256]) }
        }
    }

    @Test("refused: a changed payload, another key's signature, a signature of the wrong length")
    func signatureRefused() throws {
        let token = try signed(claims())
        let parts = token.split(separator: ".").map(String.init)
        var other = claims()
        other.appID = "OTHER.com.example"
        let forged = parts[0] + "." + (try signed(other)).split(separator: ".")[1] + "." + parts[2]
        #expect(!CompactJWS.isSigned(try CompactJWS.parse(forged, accepting: [.es256]), by: .es256(key.publicKey)))
        #expect(!CompactJWS.isSigned(try CompactJWS.parse(token, accepting: [.es256]), by: .es256(P256.Signing.PrivateKey().publicKey)))
        let short = parts[0] + "." + parts[1] + "." + Base64.urlEncode([UInt8](repeating: 1, count: 63))
        #expect(!CompactJWS.isSigned(try CompactJWS.parse(short, accepting: [.es256]), by: .es256(key.publicKey)))
        #expect(CompactJWS.isSigned(try CompactJWS.parse(token, accepting: [.es256]), by: .es256(key.publicKey)))
    }

    func refreshClaims(appID: String = "TEAM.com.example") -> RefreshTokenClaims {
        // Whole seconds, as tokens carry times: the claims read back equal these.
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        return RefreshTokenClaims(
            subject: .init(value: "key-1"), appID: appID, environment: "production", appVersion: nil, family: UUID().uuidString,
            generation: 3, issuedAt: .init(value: now), expiration: .init(value: now.addingTimeInterval(600)),
            id: .init(value: UUID().uuidString), type: RefreshTokenClaims.typeValue, audience: .init(value: RefreshTokenClaims.audienceValue))
    }

    func authenticated(_ claims: RefreshTokenClaims, with macKey: SymmetricKey) throws -> String {
        try CompactJWS.authenticate(
            claims, headerSegment: try CompactJWS.headerSegment(.hs256, kid: kid, typ: RefreshTokenClaims.headerType), key: macKey)
    }

    @Test("an HS256 token reads back under its key and verifies in jwt-kit's HMAC too")
    func hs256RoundTrip() async throws {
        let macKey = RefreshTokenKey.derive(from: key, kid: kid)
        let original = refreshClaims()
        let token = try authenticated(original, with: macKey)
        let parsed = try CompactJWS.parse(token, accepting: [.hs256, .es256])
        #expect(parsed.algorithm == .hs256)
        #expect(parsed.header.typ == RefreshTokenClaims.headerType)
        #expect(CompactJWS.isSigned(parsed, by: .hs256(macKey)))
        #expect(try CompactJWS.claims(of: parsed, as: RefreshTokenClaims.self) == original)

        let keys = await JWTKeyCollection().add(hmac: HMACKey(key: macKey), digestAlgorithm: .sha256, kid: JWKIdentifier(string: kid))
        #expect(try await keys.verify(token, as: RefreshTokenClaims.self).family == original.family)
    }

    @Test("refused: HS256 where the reader accepts ES256 only, a token checked by a key of the other algorithm")
    func algorithmFixedByReader() throws {
        let macKey = RefreshTokenKey.derive(from: key, kid: kid)
        let hs256 = try authenticated(refreshClaims(), with: macKey)
        #expect(throws: CompactJWS.Malformed.self) { try CompactJWS.parse(hs256, accepting: [.es256]) }
        let es256 = try signed(claims())
        #expect(throws: CompactJWS.Malformed.self) { try CompactJWS.parse(es256, accepting: [.hs256]) }
        // The header picks among the reader's algorithms but never the key: an ES256 key does not
        // check an HS256 token, even one whose MAC is right for it, nor the other way round.
        #expect(!CompactJWS.isSigned(try CompactJWS.parse(hs256, accepting: [.hs256, .es256]), by: .es256(key.publicKey)))
        #expect(!CompactJWS.isSigned(try CompactJWS.parse(es256, accepting: [.hs256, .es256]), by: .hs256(macKey)))
        // Spelled otherwise, it is no algorithm Sesame knows.
        for alg in ["hs256", "HS384", "HS512", "RS256", "none"] {
            #expect(throws: CompactJWS.Malformed.self) {
                try CompactJWS.parse(withHeader(#"{"alg":"\#(alg)","kid":"test-kid"}"#, hs256), accepting: [.hs256, .es256])
            }
        }
    }

    @Test("refused: an HS256 token with a changed payload, a flipped or shortened MAC, or made under another key")
    func macRefused() throws {
        let macKey = RefreshTokenKey.derive(from: key, kid: kid)
        let token = try authenticated(refreshClaims(), with: macKey)
        let parts = token.split(separator: ".").map(String.init)
        func checks(_ token: String, _ key: SymmetricKey = macKey) throws -> Bool {
            CompactJWS.isSigned(try CompactJWS.parse(token, accepting: [.hs256]), by: .hs256(key))
        }
        #expect(try checks(token))
        let otherPayload = try authenticated(refreshClaims(appID: "OTHER.com.example"), with: macKey).split(separator: ".")[1]
        #expect(try !checks(parts[0] + "." + otherPayload + "." + parts[2]))
        var mac = try #require(Base64.urlDecode(parts[2].utf8))
        mac[0] ^= 1
        #expect(try !checks(parts[0] + "." + parts[1] + "." + Base64.urlEncode(mac)))
        #expect(try !checks(parts[0] + "." + parts[1] + "." + Base64.urlEncode(Array(mac.dropLast()))))
        #expect(try !checks(parts[0] + "." + parts[1] + "."))
        #expect(try !checks(token, RefreshTokenKey.derive(from: P256.Signing.PrivateKey(), kid: kid)))
    }

    @Test("the refresh-token key is the signing key's and the kid's: another of either gives another key, and it is not the private key")
    func refreshTokenKeyDerivation() throws {
        let derived = RefreshTokenKey.derive(from: key, kid: kid)
        #expect(derived == RefreshTokenKey.derive(from: try P256.Signing.PrivateKey(rawRepresentation: key.rawRepresentation), kid: kid))
        #expect(derived != RefreshTokenKey.derive(from: key, kid: "another-kid"))
        #expect(derived != RefreshTokenKey.derive(from: P256.Signing.PrivateKey(), kid: kid))
        #expect(derived != SymmetricKey(data: key.rawRepresentation))
        #expect(derived.bitCount == 256)
    }
}
