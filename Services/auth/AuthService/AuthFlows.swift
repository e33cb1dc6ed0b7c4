import AppAttest
import Crypto
import Foundation
import HTTPTypes
import JWTKit
import Logging
import SesameAssertions
import SesameConfiguration
import SesameDomain
import SesameHTTP
import SesameStorage
import SesameTokens

/// The three auth flows — challenge, attest, refresh — over the stores, the App Attest verifier and
/// the token authority. Handlers only decode and encode.
struct AuthFlows: Sendable {
    let challenges: ChallengeStore
    let apps: AppDirectory
    let keys: AttestedKeyStore
    let families: RefreshTokenFamilies
    let tokens: TokenAuthority
    let limits: AuthLimits
    let verifier: AppAttestVerifier
    /// The assertion check refresh shares with the backend's `POST /v1/verify/assertion`.
    let assertions: AssertionCheck
    /// Bans kept in Apple's DeviceCheck bits, checked once an attestation verified.
    let bans: DeviceBanCheck
    /// Why a revoked key was revoked, when it was its risk metric.
    let receipts: ReceiptRedemptions
    /// The attestation ramp's success rate, counted.
    let outcomes: AttestationOutcomes
    /// Where automatic attestation ramps stand.
    let ramps: AttestationRamps
    /// Whether this is a production deployment (development keys are then refused by default).
    let inProduction: Bool
    let logger: Logger

    /// A nonce; for `app`, with its attestation ramp when it has one and whether an attest must carry
    /// a DeviceCheck token (an unknown app gets neither).
    func challenge(for app: ChallengeRequest?) async throws -> ChallengeResponse {
        let nonce = try await challenges.issue()
        var ramp: Double?
        var deviceTokenRequired: Bool?
        if let teamID = app?.teamId, let bundleID = app?.bundleId, let registered = try await apps.app(teamID: teamID, bundleID: bundleID) {
            ramp = ramps.percent(for: registered)
            deviceTokenRequired = registered.policy.deviceBanBit != nil ? true : nil
        }
        return ChallengeResponse(
            nonce: Data(nonce).base64EncodedString(), expiresIn: Int(challenges.lifetime.wholeSeconds), attestationRamp: ramp,
            deviceTokenRequired: deviceTokenRequired)
    }

    func attest(_ request: AttestRequest) async throws -> TokenResponse {
        let attestation = try Self.bytes(request.attestationObject, field: "attestationObject")
        let keyID = try Self.bytes(request.keyId, field: "keyId")
        let nonce = try Self.bytes(request.nonce, field: "nonce")
        guard keyID.count == 32 else { throw APIError.invalidField("keyId", "must be the 32-byte key id generateKey returned") }
        let appVersion = try Self.appVersion(request.appVersion)
        guard let app = try await apps.app(teamID: request.teamId, bundleID: request.bundleId) else { throw AuthErrors.unknownApp }

        guard let challenge = challenges.redemption(of: nonce) else { throw AuthErrors.invalidChallenge }
        // The attestation is checked first (its CPU is bounded per address), and the app's admission
        // budget, which stands for Apple's attestation limit, is spent only by one that verified: a
        // few addresses posting made-up attestations cannot ration a launch's genuine installs. A
        // refused attempt burns its challenge too, and is told so when it was not fresh.
        let verified: AppAttestVerifier.Attestation
        do {
            verified = try await verifier.verifyAttestation(
                attestation, keyId: keyID, clientDataHash: Array(SHA256.hash(data: nonce)), appId: app.appID, at: Date())
        } catch {
            guard try await challenges.consume(nonce) else { throw AuthErrors.invalidChallenge }
            logger.info("attestation refused", metadata: ["app": "\(app.appID)", "step": "\(error.step.rawValue)"])
            AttestationMetrics.refused(appID: app.appID, step: error.step)
            outcomes.count(.refused, appID: app.appID)
            throw AuthErrors.attestationRefused(error)
        }
        // The challenge redeemed and the budget spent in one statement. A client told to wait asks
        // for a new challenge when it comes back.
        guard try await limits.attestAdmission.enforce(app.appID, redeeming: challenge, jitterSeconds: 5) else { throw AuthErrors.invalidChallenge }
        if verified.environment == .development, !app.policy.allowsDevelopmentKeys(inProduction: inProduction) {
            AttestationMetrics.refused(appID: app.appID, .environment)
            throw AuthErrors.environmentNotAllowed
        }
        let deviceToken = try await bans.admit(
            deviceToken: request.deviceToken, app: app, environment: verified.environment, keyID: Base64.urlEncode(keyID))
        guard
            let family = try await keys.register(
                keyID: keyID, appID: app.appID, attestation: verified, appVersion: appVersion?.text, deviceToken: deviceToken,
                familyLifetime: tokens.lifetimes.refresh)
        else {
            AttestationMetrics.refused(appID: app.appID, .keyReused)
            throw AuthErrors.keyAlreadyAttested
        }
        AttestationMetrics.accepted(appID: app.appID)
        outcomes.count(.attested, appID: app.appID)

        let subject = TokenAuthority.Subject(
            keyID: Base64.urlEncode(keyID), appID: app.appID, environment: verified.environment.rawValue, appVersion: appVersion?.text)
        return try await respond(with: tokens.issue(for: subject, family: family, generation: 0))
    }

    func refresh(_ request: RefreshRequest) async throws -> TokenResponse {
        let claims: RefreshTokenClaims
        do {
            claims = try await tokens.verifyRefreshToken(request.refreshToken)
        } catch let error as TokenError {
            logger.info("refresh token refused", metadata: ["reason": "\(error.reason)"])
            throw AuthErrors.invalidToken
        }
        try limits.refreshPerKey.enforce(claims.subject.value)
        let claimedVersion = try Self.appVersion(request.appVersion)
        guard let family = UUID(uuidString: claims.family), let keyID = Base64.urlDecode(claims.subject.value.utf8) else {
            throw AuthErrors.invalidToken
        }

        // The common refresh in one round trip: when the request passes the app's policy as last
        // read, one statement rotates the family if that policy and everything else still hold.
        let read: RefreshFamilyState?
        if let assumed = policyPassing(request, claims) {
            switch try await families.rotateIfUnchanged(
                family, from: claims.generation, appID: claims.appID, keyID: keyID, assumed: assumed, lifetime: tokens.lifetimes.refresh,
                appVersion: claimedVersion?.text)
            {
            case .rotated(let generation):
                return try await issue(claims, appVersion: claimedVersion, family: family, generation: generation)
            case .declined(let state):
                read = state
            }
        } else {
            read = try await families.state(of: family)
        }
        guard let state = read, state.appID == claims.appID, state.keyID == keyID else { throw AuthErrors.invalidToken }
        if state.keyRevoked, try await receipts.revokedForRisk(keyID) { throw AuthErrors.riskTooHigh }
        if state.revoked || state.keyRevoked { throw AuthErrors.tokenRevoked }
        if state.expired { throw AuthErrors.invalidToken }
        // The policy may have changed since the key was attested.
        if claims.environment != AppAttestEnvironment.production.rawValue, !state.policy.allowsDevelopmentKeys(inProduction: inProduction) {
            throw AuthErrors.environmentNotAllowed
        }
        // The token's version decides, and so does the one the app now claims: claiming another
        // version cannot escape a revocation of the version the family was issued for.
        let tokenVersion = claims.appVersion.flatMap { AppVersion($0) }
        if RefreshTokenFamilies.isRevokedByEmergency(state, tokenVersion: tokenVersion, claimedVersion: claimedVersion) {
            throw AuthErrors.tokenRevoked
        }

        // The token just before the current one, soon after the rotation: a reply lost in flight,
        // if the family's own key asserts so (`RefreshTokenFamilies`' grace window).
        if claims.generation == state.generation - 1, state.inGraceWindow, !state.currentFromGrace,
            let assertion = request.assertion, let clientData = request.clientData
        {
            return try await graceRotation(
                assertion: assertion, clientData: clientData, claims: claims, state: state, family: family, claimedVersion: claimedVersion)
        }
        // A superseded token is a theft signal whatever else the request carries (a thief has no
        // device key to assert with): the family is revoked before any other check can refuse it.
        if claims.generation < state.generation,
            case .reused = try await families.rotate(family, from: claims.generation, lifetime: tokens.lifetimes.refresh)
        {
            logger.warning("refresh token reused: family revoked", metadata: ["app": "\(state.appID)", "family": "\(family)"])
            throw AuthErrors.refreshTokenReused
        }

        let outcome: RotationOutcome
        switch (request.assertion, request.clientData) {
        case (let assertion?, let clientData?):
            let (challenge, counter) = try await checkAssertion(assertion, clientData: clientData, key: state.key, appID: state.appID)
            outcome = try await families.rotate(
                family, from: claims.generation, lifetime: tokens.lifetimes.refresh, appVersion: claimedVersion?.text, redeeming: challenge,
                advancingCounterOf: state.keyID, to: counter)
        case (nil, nil):
            if state.policy.refreshRequiresAssertion { throw AuthErrors.assertionRequired }
            outcome = try await families.rotate(family, from: claims.generation, lifetime: tokens.lifetimes.refresh, appVersion: claimedVersion?.text)
        default:
            throw APIError.invalidField("assertion", "and \"clientData\" must be sent together")
        }

        return try await finish(outcome, claims: claims, state: state, family: family, claimedVersion: claimedVersion)
    }

    /// The answer to a rotation's outcome: the new pair, or why not.
    private func finish(
        _ outcome: RotationOutcome, claims: RefreshTokenClaims, state: RefreshFamilyState, family: UUID, claimedVersion: AppVersion?
    ) async throws -> TokenResponse {
        switch outcome {
        case .rotated(let generation):
            return try await issue(claims, appVersion: claimedVersion, family: family, generation: generation)
        case .reused:
            logger.warning("refresh token reused: family revoked", metadata: ["app": "\(state.appID)", "family": "\(family)"])
            throw AuthErrors.refreshTokenReused
        case .unusable:
            throw AuthErrors.tokenRevoked
        case .counterNotAdvanced:
            throw AuthErrors.assertionRefused("step 'counter'")
        case .challengeNotRedeemed:
            throw AuthErrors.invalidChallenge
        }
    }

    /// The previous token presented again inside the grace window with an assertion: rotated once
    /// more, from the family's current generation, when the family's key asserts over a fresh
    /// challenge. Any other refusal there (a malformed or failing assertion, another key, an unknown
    /// or spent challenge, a counter that did not advance) is a reuse, and revokes: a thief holding
    /// the previous token must not get to try again. Only a transient failure (the database, a rate
    /// limit) leaves the family as it is.
    private func graceRotation(
        assertion: String, clientData: String, claims: RefreshTokenClaims, state: RefreshFamilyState, family: UUID, claimedVersion: AppVersion?
    ) async throws -> TokenResponse {
        let checked: (challenge: ChallengeStore.Redemption, counter: UInt32)
        do {
            checked = try await checkAssertion(assertion, clientData: clientData, key: state.key, appID: state.appID)
        } catch let refusal as APIError where !Self.isTransient(refusal) {
            throw try await revokeForReuse(family, claims: claims, appID: state.appID, why: refusal.code)
        }
        let outcome = try await families.rotate(
            family, from: state.generation, lifetime: tokens.lifetimes.refresh, appVersion: claimedVersion?.text, redeeming: checked.challenge,
            advancingCounterOf: state.keyID, to: checked.counter, grace: true)
        switch outcome {
        case .rotated: logger.info("refresh reply lost in flight: rotated again in the grace window", metadata: ["app": "\(state.appID)"])
        case .counterNotAdvanced, .challengeNotRedeemed:
            throw try await revokeForReuse(family, claims: claims, appID: state.appID, why: "\(outcome)")
        case .reused, .unusable: break
        }
        return try await finish(outcome, claims: claims, state: state, family: family, claimedVersion: claimedVersion)
    }

    /// Revokes `family` as a reuse of the superseded token `claims` carries; the refusal to answer.
    private func revokeForReuse(_ family: UUID, claims: RefreshTokenClaims, appID: String, why: String) async throws -> APIError {
        _ = try await families.rotate(family, from: claims.generation, lifetime: tokens.lifetimes.refresh)
        logger.warning(
            "previous refresh token refused in the grace window: family revoked", metadata: ["app": "\(appID)", "family": "\(family)", "why": "\(why)"])
        return AuthErrors.refreshTokenReused
    }

    /// Whether `refusal` says nothing about the request (the server's trouble, or a rate limit).
    private static func isTransient(_ refusal: APIError) -> Bool {
        refusal.status.code >= 500 || refusal.status == .tooManyRequests
    }

    /// The app's policy as last read, if the request passes it without an assertion (so that the
    /// one-statement refresh may assume it).
    private func policyPassing(_ request: RefreshRequest, _ claims: RefreshTokenClaims) -> PolicySightings.Sighting? {
        guard request.assertion == nil, request.clientData == nil, let assumed = families.sightings.lastSeen(of: claims.appID),
            !assumed.policy.refreshRequiresAssertion,
            claims.environment == AppAttestEnvironment.production.rawValue || assumed.policy.allowsDevelopmentKeys(inProduction: inProduction)
        else { return nil }
        return assumed
    }

    /// The tokens of `family`'s new `generation`, for the install `claims` named, now at `appVersion` if it said.
    private func issue(_ claims: RefreshTokenClaims, appVersion: AppVersion?, family: UUID, generation: Int64) async throws -> TokenResponse {
        let subject = TokenAuthority.Subject(
            keyID: claims.subject.value, appID: claims.appID, environment: claims.environment, appVersion: appVersion?.text ?? claims.appVersion)
        return try await respond(with: tokens.issue(for: subject, family: family, generation: generation))
    }

    /// Checks an assertion by the family's attested key over `clientData`, which must carry a
    /// challenge: the challenge, for the rotation to redeem, and the counter, for it to advance.
    /// A refused assertion spends its challenge here, and is reported as an invalid challenge when
    /// the challenge was not fresh, as if the challenge had been checked first.
    private func checkAssertion(
        _ assertion: String, clientData: String, key: AttestedKey, appID: String
    ) async throws -> (challenge: ChallengeStore.Redemption, counter: UInt32) {
        let assertionBytes = try Self.bytes(assertion, field: "assertion")
        let clientDataBytes = try Self.bytes(clientData, field: "clientData")
        guard let parsed = try? JSONDecoder().decode(AssertionClientData.self, from: Data(clientDataBytes)),
            let nonce = Base64.decode(parsed.challenge)
        else { throw APIError.invalidField("clientData", "must be base64 of a JSON object with a \"challenge\"") }
        guard let challenge = challenges.redemption(of: nonce) else { throw AuthErrors.invalidChallenge }
        do {
            return (challenge, try assertions.check(assertionBytes, clientData: clientDataBytes, key: key, appID: appID))
        } catch let refusal as AssertionCheck.Refusal {
            guard try await challenges.consume(nonce) else { throw AuthErrors.invalidChallenge }
            switch refusal {
            case .unknownKey: throw AuthErrors.invalidToken
            case .revokedKey: throw AuthErrors.tokenRevoked
            case .invalid(let step): throw AuthErrors.assertionRefused("step '\(step)'")
            }
        }
    }

    private func respond(with pair: TokenAuthority.TokenPair) -> TokenResponse {
        TokenMetrics.issued(tier: .attested, appID: pair.access.appID)
        return TokenResponse(accessToken: pair.accessToken, refreshToken: pair.refreshToken, expiresIn: Int(tokens.lifetimes.access.wholeSeconds), tier: .attested)
    }

    /// The bytes of a base64 field; the bound is far above any real App Attest object.
    static func bytes(_ text: String, field: String) throws -> [UInt8] {
        try APIError.decodeBase64(text, field: field, maxCharacters: 64 * 1024)
    }

    static func appVersion(_ text: String?) throws -> AppVersion? {
        guard let text else { return nil }
        guard let version = AppVersion(text) else {
            throw APIError.invalidField("appVersion", "must look like 2.1.3 (at most 9 digits a part)")
        }
        return version
    }
}
