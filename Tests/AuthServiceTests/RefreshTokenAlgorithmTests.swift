import Crypto
import Foundation
import HTTPTypes
import JWTKit
import Logging
import PostgresNIO
import SesameDomain
import Testing

@testable import SesameTokens

/// Refresh tokens are HS256 under a key only auth holds (derived from the signing key); access and
/// API tokens stay ES256 for everyone who verifies them with the JWKS. The kind of token fixes the
/// algorithm; the header only says which of those it used.
@Suite("Refresh tokens under HS256", .timeLimit(.minutes(3)))
struct RefreshTokenAlgorithmTests {
    let logger = Logger(label: "test")
    let subject = TokenAuthority.Subject(keyID: "key-1", appID: AuthHarness.appID, environment: "development", appVersion: nil)
    /// Now in whole seconds, as tokens carry times: claims read back then equal those issued.
    var now: Date { Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down)) }

    /// `claims` under a header of `algorithm`, `kid` and `typ`, signed or MAC'd with `key` as the
    /// algorithm says: what an attacker (or an older auth) could make.
    func token(
        _ claims: some Encodable, _ algorithm: CompactJWS.Algorithm, kid: String, typ: String, signingKey: P256.Signing.PrivateKey? = nil,
        macKey: SymmetricKey? = nil
    ) throws -> String {
        let header = try CompactJWS.headerSegment(algorithm, kid: kid, typ: typ)
        switch algorithm {
        case .es256: return try CompactJWS.sign(claims, headerSegment: header, key: try #require(signingKey))
        case .hs256: return try CompactJWS.authenticate(claims, headerSegment: header, key: try #require(macKey))
        }
    }

    static func header(_ token: String) throws -> CompactJWS.Header {
        try CompactJWS.parse(token, accepting: [.es256, .hs256]).header
    }

    /// Rotates to a key that signs at once and retires `oldKid` a second ago (the rotation's own
    /// handover is "now", which the clocks may not yet have passed): the old key verifies, and
    /// auth opens it, but it no longer signs.
    @discardableResult
    func rotateNow(retiring oldKid: String, _ store: SigningKeyStore, _ harness: AuthHarness) async throws -> SigningKeyRotation {
        let rotation = try await store.rotate(activatingAfter: .zero, verifyRetiredFor: .seconds(7200))
        try await harness.database.query("UPDATE signing_keys SET retired_at = now() - interval '1 second' WHERE kid = \(oldKid)")
        return rotation
    }

    @Test("auth issues HS256 refresh tokens and ES256 access tokens with one kid; a refresh token it signed with ES256 before still refreshes")
    func issuedAlgorithms() async throws {
        try await AuthHarness.run { harness in
            let (_, attested) = try await harness.attestNewKey()
            let access = try #require(attested["accessToken"])
            let refresh = try #require(attested["refreshToken"])
            #expect(try Self.header(access).alg == "ES256")
            #expect(try Self.header(refresh).alg == "HS256")
            #expect(try Self.header(refresh).typ == RefreshTokenClaims.headerType)
            #expect(try Self.header(refresh).kid == Self.header(access).kid)

            let refreshed = try await harness.refresh(refresh)
            #expect(refreshed.status == .ok)
            let current = try #require(refreshed["refreshToken"])
            #expect(try Self.header(current).alg == "HS256")

            // An ES256 refresh token, as auth made them before: the same claims signed with the key.
            try await harness.withTokenStore { store in
                let signing = try #require(try await store.usableKeys(decryptSigning: true).last { $0.privateKey != nil })
                let claims = try CompactJWS.claims(of: try CompactJWS.parse(current, accepting: [.hs256]), as: RefreshTokenClaims.self)
                let legacy = try token(claims, .es256, kid: signing.kid, typ: RefreshTokenClaims.headerType, signingKey: signing.privateKey)
                let reply = try await harness.refresh(legacy)
                #expect(reply.status == .ok)
                #expect(try Self.header(try #require(reply["refreshToken"])).alg == "HS256")
            }
        }
    }

    @Test("refused: an HS256 access or API token, a refresh token MAC'd with the public key or with a changed payload, one signed by a foreign key, and any read by a verifier that does not sign")
    func forgeriesRefused() async throws {
        try await AuthHarness.run { harness in
            try await harness.withTokenStore { store in
                let signer = TokenAuthority(store: store, signs: true, logger: logger)
                let pair = try await signer.issue(for: subject, family: UUID(), generation: 0, now: now)
                #expect(try await signer.verifyRefreshToken(pair.refreshToken) == pair.refresh)
                let key = try #require(try await store.usableKeys(decryptSigning: true).last)
                let macKey = try #require(key.refreshTokenKey)

                // The refresh-token key makes no access or API token, whatever the header says.
                let hs256Access = try token(pair.access, .hs256, kid: key.kid, typ: AccessTokenClaims.headerType, macKey: macKey)
                await #expect(throws: TokenError.self) { try await signer.verifyAccessToken(hs256Access) }
                let (_, apiClaims) = try await signer.issueAPIToken(for: pair.access, audience: "orders", binding: nil, lifetime: .seconds(60), now: now)
                let hs256API = try token(apiClaims, .hs256, kid: key.kid, typ: APITokenClaims.headerType, macKey: macKey)
                await #expect(throws: TokenError.self) { try await signer.verifyAPIToken(hs256API) }

                // The public key (as the JWKS publishes it, in every encoding) is no MAC key.
                for published in [
                    key.publicKey.x963Representation, key.publicKey.rawRepresentation, key.publicKey.compressedRepresentation,
                    Data(key.publicKey.pemRepresentation.utf8),
                ] {
                    let confused = try token(pair.refresh, .hs256, kid: key.kid, typ: RefreshTokenClaims.headerType, macKey: SymmetricKey(data: published))
                    await #expect(throws: TokenError.self) { try await signer.verifyRefreshToken(confused) }
                }

                // A changed payload under the old MAC.
                var stolen = pair.refresh
                stolen.subject = .init(value: "key-2")
                let parts = pair.refreshToken.split(separator: ".")
                let swapped = try token(stolen, .hs256, kid: key.kid, typ: RefreshTokenClaims.headerType, macKey: macKey).split(separator: ".")
                await #expect(throws: TokenError.self) { try await signer.verifyRefreshToken("\(parts[0]).\(swapped[1]).\(parts[2])") }

                // An access token is not a refresh token, nor is an ES256 refresh token signed by another key.
                await #expect(throws: TokenError.self) { try await signer.verifyRefreshToken(pair.accessToken) }
                let foreign = try token(pair.refresh, .es256, kid: key.kid, typ: RefreshTokenClaims.headerType, signingKey: P256.Signing.PrivateKey())
                await #expect(throws: TokenError.self) { try await signer.verifyRefreshToken(foreign) }

                // A service that only verifies holds no refresh-token key: it reads access tokens alone.
                let verifier = TokenAuthority(store: store, signs: false, logger: logger)
                #expect(try await verifier.verifyAccessToken(pair.accessToken) == pair.access)
                await #expect(throws: TokenError.self) { try await verifier.verifyRefreshToken(pair.refreshToken) }
                #expect(try await store.usableKeys(decryptSigning: false).allSatisfy { $0.refreshTokenKey == nil && $0.privateKey == nil })

                // Through the service: a refresh token MAC'd with the public key is an invalid token.
                let confused = try token(
                    pair.refresh, .hs256, kid: key.kid, typ: RefreshTokenClaims.headerType, macKey: SymmetricKey(data: key.publicKey.x963Representation))
                #expect(try await harness.refresh(confused).errorCode == "invalid_token")
            }
        }
    }

    @Test("a rotated-out key keeps reading its refresh tokens without its private part, and reads no other key's; revoked, it reads none")
    func rotationAndRevocation() async throws {
        try await AuthHarness.run { harness in
            try await harness.withTokenStore { store in
                let signer = TokenAuthority(store: store, signs: true, logger: logger)
                let old = try await signer.issue(for: subject, family: UUID(), generation: 0, now: now)
                let oldKid = try #require(try Self.header(old.refreshToken).kid)

                try await rotateNow(retiring: oldKid, store, harness)
                try await signer.reload()
                let new = try await signer.issue(for: subject, family: UUID(), generation: 0, now: now)
                let newKid = try #require(try Self.header(new.refreshToken).kid)
                #expect(newKid != oldKid)
                #expect(try await signer.verifyRefreshToken(old.refreshToken) == old.refresh)
                #expect(try await signer.verifyRefreshToken(new.refreshToken) == new.refresh)
                let retired = try #require(try await store.usableKeys(decryptSigning: true).first { $0.kid == oldKid })
                #expect(retired.privateKey == nil)
                #expect(retired.refreshTokenKey != nil)

                // The old token's MAC under the new key's name: the kid picks the key, and it is not the old one.
                let oldParts = old.refreshToken.split(separator: ".")
                let renamed = try CompactJWS.headerSegment(.hs256, kid: newKid, typ: RefreshTokenClaims.headerType)
                await #expect(throws: TokenError.self) { try await signer.verifyRefreshToken("\(renamed).\(oldParts[1]).\(oldParts[2])") }

                // An emergency revocation: every earlier key stops verifying, and its refresh tokens with it.
                try await store.rotate(activatingAfter: .zero, verifyRetiredFor: nil)
                try await signer.reload()
                await #expect(throws: TokenError.self) { try await signer.verifyRefreshToken(old.refreshToken) }
                await #expect(throws: TokenError.self) { try await signer.verifyRefreshToken(new.refreshToken) }
                let fresh = try await signer.issue(for: subject, family: UUID(), generation: 0, now: now)
                #expect(try await signer.verifyRefreshToken(fresh.refreshToken) == fresh.refresh)
            }
        }
    }

    @Test("a retired key that cannot be opened costs its refresh tokens alone; a signing key that cannot be opened fails the load")
    func unreadableRetiredKey() async throws {
        try await AuthHarness.run { harness in
            try await harness.withTokenStore { store in
                let signer = TokenAuthority(store: store, signs: true, logger: logger)
                let old = try await signer.issue(for: subject, family: UUID(), generation: 0, now: now)
                let oldKid = try #require(try Self.header(old.refreshToken).kid)
                let rotation = try await rotateNow(retiring: oldKid, store, harness)
                let garbage = Data(repeating: 1, count: 80)
                try await harness.database.query("UPDATE signing_keys SET private_key_ciphertext = \(garbage) WHERE kid = \(oldKid)")

                try await signer.reload()
                await #expect(throws: TokenError.self) { try await signer.verifyRefreshToken(old.refreshToken) }
                #expect(try await signer.verifyAccessToken(old.accessToken) == old.access)
                let new = try await signer.issue(for: subject, family: UUID(), generation: 0, now: now)
                #expect(try Self.header(new.refreshToken).kid == rotation.kid)
                #expect(try await signer.verifyRefreshToken(new.refreshToken) == new.refresh)

                try await harness.database.query("UPDATE signing_keys SET private_key_ciphertext = \(garbage) WHERE kid = \(rotation.kid)")
                await #expect(throws: (any Error).self) { try await store.usableKeys(decryptSigning: true) }
            }
        }
    }
}
