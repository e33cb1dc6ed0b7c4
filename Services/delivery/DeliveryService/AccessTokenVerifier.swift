import Foundation
import Hummingbird
import JWTKit
import Synchronization
import SesameHTTP
import SesameTokens

/// Verifies access tokens offline with auth's public keys, remembering recent verdicts so the
/// hot path does not repeat ECDSA for every request of the same app instance.
///
/// Only successes are remembered, until the token's expiry: expired verdicts are swept out once a
/// minute (an hour-long soak found them kept until the memory was full, 50,000 tokens of about
/// 1.7 KB each, each replica growing 70–80 MiB an hour). The memory is bounded (still full after a
/// sweep, it starts again) and belongs to one generation of the authority's key set: whichever
/// path changes the keys (a rotation event, the periodic resync, a token naming a new key), a key
/// that left the set takes every verdict with it, so a revoked key's tokens stop at once.
final class AccessTokenVerifier: Sendable {
    private let authority: TokenAuthority
    private let verified = Mutex(Memory())
    private let capacity: Int

    /// Verdicts reached with one generation of the key set.
    private struct Memory {
        var generation: UInt64 = 0
        var tokens: [String: AccessTokenClaims] = [:]
        /// When expired verdicts are next swept out.
        var nextSweep = Date.distantPast

        /// Forgets the verdicts of tokens expired at `now`, at most once per `sweepInterval`.
        mutating func sweepIfDue(now: Date) {
            guard now >= nextSweep else { return }
            tokens = tokens.filter { $0.value.expiration.value > now }
            nextSweep = now.addingTimeInterval(AccessTokenVerifier.sweepInterval)
        }
    }

    /// How often expired verdicts are swept out (on the next verification after it has passed).
    static let sweepInterval: TimeInterval = 60

    init(authority: TokenAuthority, capacity: Int = 50_000) {
        self.authority = authority
        self.capacity = capacity
    }

    /// The claims of a valid, unexpired access token; `TokenError` otherwise.
    func verify(_ token: String, now: Date = Date()) async throws -> AccessTokenClaims {
        if let claims = remembered(token, now: now) { return claims }
        let generation = authority.keySetGeneration.current
        let claims = try await authority.verifyAccessToken(token)
        let kept = verified.withLock { memory in
            // Keys changed while verifying: the verdict may rest on a key that has gone.
            guard authority.keySetGeneration.current == generation, generation > 0 else { return false }
            if memory.generation != generation { memory = Memory(generation: generation) }
            memory.sweepIfDue(now: now)
            if memory.tokens.count >= capacity { memory.tokens.removeAll(keepingCapacity: true) }
            memory.tokens[token] = claims
            return true
        }
        return kept ? claims : try await authority.verifyAccessToken(token)
    }

    /// The claims of `token` if it was verified before, with the keys that verify now, and has not
    /// expired; nil when it would have to be verified (or is invalid). Does not wait: for the event
    /// loop's fast path.
    func remembered(_ token: String, now: Date = Date()) -> AccessTokenClaims? {
        let generation = authority.keySetGeneration.current
        let claims: AccessTokenClaims? = verified.withLock { memory in
            if memory.generation < generation {
                memory = Memory(generation: generation)
                return nil
            }
            return memory.generation == generation ? memory.tokens[token] : nil
        }
        guard let claims, claims.expiration.value > now else { return nil }
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

    /// How many verdicts are remembered (for tests).
    var rememberedCount: Int { verified.withLock { $0.tokens.count } }

    /// Reloads the signing keys (the verdicts of a key that left the set are then forgotten).
    func reloadKeys() async throws {
        try await authority.reload()
    }
}
