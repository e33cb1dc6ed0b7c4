import Foundation
import JWTKit
import Hummingbird
import Logging
import SesameAssertions
import SesameDomain
import SesameHTTP
import SesameStorage
import SesameTokens

/// Under `v1/verify`, for the app's own backend, authenticated by a backend key:
/// `POST consume` redeems a single-use API token once; `POST assertion` checks an App Attest
/// assertion the app made over an action's data.
struct VerifyRoutes {
    let backendKeys: BackendKeyStore
    let consumed: ConsumedAPITokens
    let tokens: TokenAuthority
    let assertions: AssertionCheck
    let gate: InstallGate
    let limits: AuthLimits
    let logger: Logger

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.post("consume") { request, context -> ConsumeResponse in
            // The key is checked in the consume's own statement: one round trip.
            let keyHash = try limitedBackendKeyHash(of: request)
            let body = try await request.decode(as: ConsumeRequest.self, context: context)
            return try await consume(body, backendKeyHash: keyHash)
        }
        group.post("assertion") { request, context -> AssertionResponse in
            let keyHash = try limitedBackendKeyHash(of: request)
            guard let key = try await backendKeys.authenticate(hash: keyHash) else { throw AuthErrors.invalidBackendKey }
            let body = try await request.decode(as: AssertionRequest.self, context: context)
            return try await checkAssertion(body, appID: key.appID)
        }
    }

    /// The SHA-256 of the presented backend key, after its rate limit (one bucket per key, shared
    /// by both endpoints, spent before any database work); refused when nothing of its form is sent.
    private func limitedBackendKeyHash(of request: Request) throws -> Data {
        guard let credential = request.bearerCredential, BackendKeyStore.isWellFormed(credential) else { throw AuthErrors.invalidBackendKey }
        let hash = BearerSecret.hash(credential)
        try limits.verifyPerBackendKey.enforce(Base64.urlEncode(hash))
        return hash
    }

    func checkAssertion(_ body: AssertionRequest, appID: String) async throws -> AssertionResponse {
        guard let keyID = Base64.decode(body.keyId), keyID.count == 32 else {
            throw APIError.invalidField("keyId", "must be the App Attest key id, base64 or base64url of 32 bytes")
        }
        let assertion = try AuthFlows.bytes(body.assertion, field: "assertion")
        let clientData = try AuthFlows.bytes(body.clientData, field: "clientData")
        do {
            let (key, counter) = try await assertions.verify(assertion, clientData: clientData, keyID: keyID, appID: appID)
            try await passGate(appID: appID, keyID: keyID, subject: .key)
            guard let environment = AssertionResponse.environmentPayload(rawValue: key.environment) else {
                // Stored from the attestation's own environment: another value is the database's fault.
                throw APIError.internalError
            }
            return AssertionResponse(app: appID, keyId: Base64.urlEncode(keyID), environment: environment, tier: .attested, counter: Int(counter))
        } catch let refusal as AssertionCheck.Refusal {
            switch refusal {
            case .unknownKey: throw AuthErrors.unknownAttestedKey
            case .revokedKey: throw AuthErrors.deviceRevoked
            case .invalid(let step): throw AuthErrors.assertionRefused("step '\(step)'")
            }
        }
    }

    func consume(_ body: ConsumeRequest, backendKeyHash: Data) async throws -> ConsumeResponse {
        let claims: APITokenClaims
        do {
            claims = try await tokens.verifyAPIToken(body.token)
        } catch let error as TokenError {
            logger.info("API token refused at consume", metadata: ["reason": "\(error.reason)"])
            throw AuthErrors.apiTokenInvalid
        }
        if let audience = body.audience, audience != claims.audience.value.first { throw AuthErrors.audienceMismatch }
        // A relay call's proof is the relay's to spend: a backend redeeming one is not its audience.
        if claims.audience.value.contains(where: APIAudience.isRelay) { throw AuthErrors.audienceMismatch }
        guard claims.isLimitedUse else { throw AuthErrors.notSingleUse }
        guard let keyID = Base64.decode(claims.subject.value) else { throw AuthErrors.apiTokenInvalid }
        switch try await consumed.consume(
            tokenID: claims.id.value, appID: claims.appID, audience: claims.audience.value.first ?? "", audienceNamed: body.audience != nil,
            expiresAt: claims.expiration.value, backendKeyHash: backendKeyHash)
        {
        case .consumed: break
        case .alreadyConsumed: throw AuthErrors.alreadyConsumed
        case .unknownBackendKey: throw AuthErrors.invalidBackendKey
        case .otherApp: throw AuthErrors.wrongApp
        case .otherAudience: throw AuthErrors.audienceMismatch
        case .audienceRequired: throw AuthErrors.audienceRequired
        }
        // After the backend key proved itself: a revocation since the token was issued holds.
        try await passGate(appID: claims.appID, keyID: keyID, subject: .token(version: claims.appVersion, issuedAt: claims.issuedAt.value))
        return ConsumeResponse(
            app: claims.appID, sub: claims.subject.value, tier: claims.tier, env: claims.environment, ver: claims.appVersion,
            aud: claims.audience.value.first ?? "", bnd: claims.binding, jti: claims.id.value,
            iat: Int(claims.issuedAt.value.timeIntervalSince1970), exp: Int(claims.expiration.value.timeIntervalSince1970))
    }

    /// The install gate, its refusals as the backend reads them: refuse the action.
    private func passGate(appID: String, keyID: [UInt8], subject: InstallGate.Subject) async throws {
        do {
            try await gate.check(appID: appID, keyID: keyID, subject: subject)
        } catch let refusal as InstallGate.Refusal {
            switch refusal {
            case .unknownKey: throw AuthErrors.unknownAttestedKey
            case .revokedKey: throw AuthErrors.deviceRevoked
            case .revoked: throw AuthErrors.installRevoked
            case .disabled(let reason): throw APIError.versionDisabled(reason)
            }
        }
    }
}
