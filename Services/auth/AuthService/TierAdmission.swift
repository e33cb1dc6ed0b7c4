import Foundation
import Logging
import Metrics
import SesameConfiguration
import SesameDomain
import SesameHTTP
import SesameJSON
import SesameStorage
import SesameTokens

/// The two ways in below `attested`: a debug token (`tier: debug`) and, where the app's policy
/// admits them, a device without App Attest (`tier: unattested`). Both earn an access token alone:
/// with no key to assert with there is nothing a refresh token would prove, so the app exchanges
/// again when it expires; delivery refuses the tokens of a revoked debug token at once.
struct TierAdmission: Sendable {
    let challenges: ChallengeStore
    let apps: AppDirectory
    let debugTokens: DebugTokenStore
    let tokens: TokenAuthority
    let limits: AuthLimits
    /// What installs report about App Attest on their device, counted for the attestation ramp.
    let outcomes: AttestationOutcomes
    /// Whether this is a production deployment (debug tokens are then refused unless allowed).
    let inProduction: Bool
    let logger: Logger

    /// `POST /v1/auth/debug`.
    func exchangeDebugToken(_ request: DebugTokenRequest) async throws -> TierTokenResponse {
        let appVersion = try AuthFlows.appVersion(request.appVersion)
        guard let app = try await apps.app(teamID: request.teamId, bundleID: request.bundleId) else { throw AuthErrors.unknownApp }
        guard app.policy.allowsDebugTokens(inProduction: inProduction) else { throw AuthErrors.debugTokensNotAllowed }
        let redeemed: DebugTokenStore.Redeemed
        do {
            redeemed = try await debugTokens.redeem(
                request.debugToken, appID: app.appID, details: ["appVersion": appVersion.map { .string($0.text) } ?? .null])
        } catch let refusal as DebugTokenStore.Refusal {
            logger.info("debug token refused", metadata: ["app": "\(app.appID)", "reason": "\(refusal)"])
            throw AuthErrors.debugTokenRefused(refusal)
        }
        logger.info("debug token exchanged", metadata: ["app": "\(app.appID)", "debugToken": "\(redeemed.name)"])
        let subject = TokenAuthority.Subject(
            keyID: DebugTokenStore.tokenSubject(redeemed.tokenID), appID: app.appID, environment: "debug", appVersion: appVersion?.text,
            tier: .debug)
        return try await issue(for: subject)
    }

    /// `POST /v1/auth/unattested`: challenge-bound, so each token costs a round trip and a
    /// challenge row, and limited per app besides the per-client limit.
    func admitUnattested(_ request: UnattestedRequest) async throws -> TierTokenResponse {
        let nonce = try AuthFlows.bytes(request.nonce, field: "nonce")
        let appVersion = try AuthFlows.appVersion(request.appVersion)
        guard let app = try await apps.app(teamID: request.teamId, bundleID: request.bundleId) else { throw AuthErrors.unknownApp }
        guard app.policy.admitUnattested else { throw AuthErrors.unattestedNotAdmitted }
        guard try await challenges.consume(nonce) else { throw AuthErrors.invalidChallenge }
        // Counted once the challenge is spent: each report costs its sender a round trip.
        switch request.reason {
        case .unsupported: report(.unsupported, appID: app.appID, reason: "unsupported")
        case .outsideRamp: report(.outsideRamp, appID: app.appID, reason: "outside_ramp")
        case nil: break
        }
        try await limits.unattestedAdmission.enforce(app.appID, jitterSeconds: 5)
        let subject = TokenAuthority.Subject(
            keyID: "unattested:" + UUID().uuidString.lowercased(), appID: app.appID, environment: "none", appVersion: appVersion?.text,
            tier: .unattested)
        return try await issue(for: subject)
    }

    /// `POST /v1/auth/attestation-failure`: an attestation that failed on the device, counted against
    /// the attestation ramp's success rate once its challenge is spent.
    func reportFailure(_ request: AttestationFailureReport) async throws {
        let nonce = try AuthFlows.bytes(request.nonce, field: "nonce")
        guard let app = try await apps.app(teamID: request.teamId, bundleID: request.bundleId) else { throw AuthErrors.unknownApp }
        guard try await challenges.consume(nonce) else { throw AuthErrors.invalidChallenge }
        switch request.reason {
        case .serverUnavailable: report(.rateLimited, appID: app.appID, reason: "rate_limited")
        case .failed: report(.deviceFailed, appID: app.appID, reason: "device_failed")
        }
    }

    private func report(_ outcome: AttestationOutcomes.Outcome, appID: String, reason: String) {
        outcomes.count(outcome, appID: appID)
        AttestationMetrics.reported(appID: appID, reason: reason)
    }

    private func issue(for subject: TokenAuthority.Subject) async throws -> TierTokenResponse {
        let (token, _) = try await tokens.issueAccessToken(for: subject)
        TokenMetrics.issued(tier: subject.tier, appID: subject.appID)
        return TierTokenResponse(accessToken: token, expiresIn: Int(tokens.lifetimes.access.wholeSeconds), tier: subject.tier)
    }
}

/// `sesame_auth_tokens_issued_total{tier, app}`: access tokens issued, by tier and app.
enum TokenMetrics {
    /// Each series' counter, made once: making one looks it up in the registry and sanitizes its
    /// labels, at every attest and refresh.
    private static let counters = BoundedMemo<String, Counter>()

    static func issued(tier: TrustTier, appID: String) {
        counters.value(for: tier.rawValue + " " + appID) { _ in
            Counter(label: "sesame_auth_tokens_issued_total", dimensions: [("tier", tier.rawValue), ("app", appID)])
        }.increment()
    }
}
