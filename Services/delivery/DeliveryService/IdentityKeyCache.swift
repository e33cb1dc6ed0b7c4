import Foundation
import Logging
import NIOCore
import SesameConfiguration
import SesameDomain
import SesameOutbound
import SesameTokens

/// The verification keys of the identity issuers apps name, fetched from their JWKS URL (or read
/// from their PEM) and kept for `lifetime`. A token that does not verify with the keys held
/// triggers one refetch at most every `refetchInterval` per issuer (the issuer may have rotated),
/// so garbage tokens cannot turn into a flood of requests to it. Concurrent requests for an issuer
/// whose keys are not held share one fetch.
///
/// Keys are held per app and issuer: a JWKS URL is fetched for the app that named it, under the
/// outbound allowances of that app (an internal issuer opened to one app is not read for another
/// that names the same URL).
actor IdentityKeyCache {
    /// An issuer as one app names it.
    private struct Held: Hashable {
        let appID: String
        let issuer: IdentityIssuer
    }

    private struct Entry {
        let keys: IdentityIssuerKeys
        let fetchedAt: ContinuousClock.Instant
    }

    /// The issuer's JWKS could not be fetched and no keys are held for it: the caller's proof
    /// cannot be checked now, which is not the same as a bad proof.
    struct IssuerUnavailable: Error, CustomStringConvertible {
        let description: String
    }

    private var entries: [Held: Entry] = [:]
    private var inFlight: [Held: Task<IdentityIssuerKeys, any Error>] = [:]
    private var lastFetchAttempt: [Held: ContinuousClock.Instant] = [:]
    /// Requests waiting for an issuer's fetch under way.
    private var waiting: [Held: Int] = [:]
    /// The most requests that wait for one issuer's fetch; more are refused at once (`503
    /// identity_issuer_unavailable`). A fetch ends within the outbound client's deadline (5 s), so
    /// no request waits longer than that.
    static let maximumWaiting = 256
    private let lifetime: Duration
    private let refetchInterval: Duration
    /// The guarded client: an app's JWKS URL is the app's to choose, so it may point anywhere.
    private let outbound: OutboundHTTPClient
    private let logger: Logger
    /// The largest JWKS document read.
    private static let maximumJWKSBytes = 256 * 1024

    init(outbound: OutboundHTTPClient, lifetime: Duration = .seconds(600), refetchInterval: Duration = .seconds(30), logger: Logger) {
        self.outbound = outbound
        self.lifetime = lifetime
        self.refetchInterval = refetchInterval
        self.logger = logger
    }

    /// The verified `sub` of `token` for `issuer`, which the app `appID` names.
    func subject(of token: String, issuer: IdentityIssuer, appID: String) async throws -> String {
        let issuer = Held(appID: appID, issuer: issuer)
        let held = try await keys(for: issuer, forceRefresh: false)
        do {
            return try await held.subject(of: token, issuer: issuer.issuer)
        } catch {
            // Only a JWKS can have gained a key since it was fetched.
            guard issuer.issuer.jwksURL != nil, let last = lastFetchAttempt[issuer], ContinuousClock.now - last > refetchInterval else { throw error }
            return try await keys(for: issuer, forceRefresh: true).subject(of: token, issuer: issuer.issuer)
        }
    }

    private func keys(for issuer: Held, forceRefresh: Bool) async throws -> IdentityIssuerKeys {
        if !forceRefresh, let entry = entries[issuer], ContinuousClock.now - entry.fetchedAt < lifetime { return entry.keys }
        if let pending = inFlight[issuer] {
            guard waiting[issuer, default: 0] < Self.maximumWaiting else {
                throw IssuerUnavailable(description: "\(Self.maximumWaiting) requests wait for this issuer's keys already")
            }
            waiting[issuer, default: 0] += 1
            defer { waiting[issuer, default: 1] -= 1 }
            return try await pending.value
        }
        let fetch = Task { try await self.load(issuer) }
        inFlight[issuer] = fetch
        defer { inFlight[issuer] = nil }
        let keys = try await fetch.value
        entries[issuer] = Entry(keys: keys, fetchedAt: .now)
        return keys
    }

    private func load(_ held: Held) async throws -> IdentityIssuerKeys {
        let issuer = held.issuer
        if let pem = issuer.publicKeysPEM { return try await IdentityIssuerKeys(pem: pem) }
        guard let url = issuer.jwksURL else { throw IdentityIssuerKeys.Refusal(description: "the issuer has neither a JWKS URL nor PEM keys") }
        lastFetchAttempt[held] = .now
        do {
            let body = try await outbound.get(url, for: OutboundUse(.jwks, appID: held.appID), maximumBytes: Self.maximumJWKSBytes)
            return try await IdentityIssuerKeys(jwksJSON: String(buffer: body))
        } catch {
            logger.warning("could not fetch an identity issuer's JWKS", metadata: ["issuer": "\(issuer.issuer)", "error": "\(String(reflecting: error))"])
            // Stale keys beat none while the issuer is unreachable.
            if let entry = entries[held] { return entry.keys }
            throw IssuerUnavailable(description: "\(error)")
        }
    }
}
