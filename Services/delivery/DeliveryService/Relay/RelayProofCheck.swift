import AppAttest
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import JWTKit
import NIOCore
import SesameAssertions
import SesameDomain
import SesameHTTP
import SesameRelayProof
import SesameStorage
import SesameTokens

/// The proof a relay's rules ask each call to carry besides the access token (`RelayProof`), each
/// over the call's `RelayCallStatement` (method, relay, path, query and body) and spent by the
/// call in PostgreSQL (one round trip), so a captured call can be neither replayed nor changed:
///
/// - `limitedUseToken`: `X-Sesame-Limited-Use-Token` carries a single-use API token of the
///   caller's own install and app, minted for this relay's audience and bound to the statement
///   (`bnd`), consumed once.
/// - `assertion`: `X-Sesame-Assertion` carries an App Attest assertion (base64) by the key the
///   access token was issued to, with the statement as client data; its counter must be above
///   the key's stored one and moves it on (`AssertionCheck`, as auth's refresh).
struct RelayProofCheck: Sendable {
    static let limitedUseTokenHeader = HTTPField.Name("X-Sesame-Limited-Use-Token")!
    static let assertionHeader = HTTPField.Name("X-Sesame-Assertion")!

    let authority: TokenAuthority
    let consumed: ConsumedAPITokens
    let assertions: AssertionCheck

    func check(_ proof: RelayProof, call: RelayCallStatement, request: Request, caller: AccessTokenClaims) async throws {
        switch proof {
        case .none: return
        case .assertion:
            guard let text = request.headers[Self.assertionHeader], let assertion = Data(base64Encoded: text) else {
                throw RelayErrors.proofRequired(proof)
            }
            // Only an attested install's token names a key (a debug token's subject does not).
            guard caller.trustTier == .attested, let keyID = Base64.decode(caller.subject.value), keyID.count == 32 else {
                throw RelayErrors.proofInvalid("assertion", "needs an attested install's key")
            }
            do {
                _ = try await assertions.verify(Array(assertion), clientData: Array(call.clientData), keyID: Array(keyID), appID: caller.appID)
            } catch let refusal as AssertionCheck.Refusal {
                switch refusal {
                case .unknownKey, .revokedKey: throw RelayErrors.proofInvalid("assertion", "is not by this install's key")
                case .invalid(let step): throw RelayErrors.proofInvalid("assertion", "does not hold (step '\(step)': over another call, replayed, or forged)")
                }
            }
        case .limitedUseToken:
            guard let token = request.headers[Self.limitedUseTokenHeader] else { throw RelayErrors.proofRequired(proof) }
            let claims: APITokenClaims
            do { claims = try await authority.verifyAPIToken(token) } catch { throw RelayErrors.proofInvalid("single-use token", "is not a valid API token") }
            guard claims.isLimitedUse else { throw RelayErrors.proofInvalid("single-use token", "is not single-use") }
            guard claims.appID == caller.appID, claims.subject.value == caller.subject.value else {
                throw RelayErrors.proofInvalid("single-use token", "was not issued to this install")
            }
            guard claims.audience.value == [RelayCallStatement.audience(relay: call.relay)] else {
                throw RelayErrors.proofInvalid("single-use token", "was minted for another audience than this relay")
            }
            guard claims.binding == call.binding else {
                throw RelayErrors.proofInvalid("single-use token", "is not bound to this call (its method, path, query and body)")
            }
            guard try await consumed.consumeForRelay(tokenID: claims.id.value, appID: claims.appID, expiresAt: claims.expiration.value) else {
                throw RelayErrors.proofInvalid("single-use token", "was already spent")
            }
        }
    }
}
