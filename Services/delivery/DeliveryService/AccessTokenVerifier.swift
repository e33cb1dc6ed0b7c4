import Foundation
import Hummingbird
import JWTKit
import Synchronization
import SesameHTTP
import SesameTokens

/// Verifies access tokens offline with auth's public keys, remembering recent verdicts so the
/// hot path does not repeat ECDSA for every request of the same app instance.
///
/// Only successes are remembered, until the token's expiry; the memory is bounded (when full it
/// starts again) and emptied when the signing keys change (a revoked key's tokens must stop at once).
final class AccessTokenVerifier: Sendable {
    private let authority: TokenAuthority
    private let verified = Mutex<[String: AccessTokenClaims]>([:])
    private let capacity: Int

    init(authority: TokenAuthority, capacity: Int = 50_000) {
        self.authority = authority
        self.capacity = capacity
    }

    /// The claims of a valid, unexpired access token; `TokenError` otherwise.
    func verify(_ token: String, now: Date = Date()) async throws -> AccessTokenClaims {
        if let claims = remembered(token, now: now) { return claims }
        let claims = try await authority.verifyAccessToken(token)
        verified.withLock { cache in
            if cache.count >= capacity { cache.removeAll(keepingCapacity: true) }
            cache[token] = claims
        }
        return claims
    }

    /// The claims of `token` if it was verified before and has not expired; nil when it would
    /// have to be verified (or is invalid). Does not wait: for the event loop's fast path.
    func remembered(_ token: String, now: Date = Date()) -> AccessTokenClaims? {
        guard let claims = verified.withLock({ $0[token] }), claims.expiration.value > now else { return nil }
        return claims
    }

    /// The claims of the request's valid access token; 401 otherwise, and 503 when the signing
    /// keys could not be loaded (PostgreSQL away before this instance first loaded them).
    func claims(of request: Request) async throws -> AccessTokenClaims {
        guard let token = request.bearerCredential else { throw DeliveryErrors.missingToken }
        do {
            return try await verify(token)
        } catch is TokenError {
            throw DeliveryErrors.invalidToken
        } catch {
            throw APIError.databaseUnavailable
        }
    }

    /// Reloads the signing keys; when the set changed, forgets every remembered verdict.
    func reloadKeys() async throws {
        let before = try await authority.jwks().keys.compactMap(\.keyIdentifier?.string)
        try await authority.reload()
        let after = try await authority.jwks().keys.compactMap(\.keyIdentifier?.string)
        if before != after { verified.withLock { $0.removeAll() } }
    }
}
