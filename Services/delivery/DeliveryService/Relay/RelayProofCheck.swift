import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import JWTKit
import NIOCore
import SesameDomain
import SesameHTTP
import SesameStorage
import SesameTokens

/// The proof a relay's rules ask each call to carry besides the access token (`RelayProof`).
///
/// `limitedUseToken`: `X-Sesame-Limited-Use-Token` carries a single-use API token
/// (`SesameClient.limitedUseToken(boundTo:)`) of the caller's own install and app, bound to the
/// request's body (`bnd`: the base64url SHA-256 of it), spent by the call (in PostgreSQL, once: a
/// replayed request is refused). `assertion` is not checked yet, so such a relay refuses every call.
struct RelayProofCheck: Sendable {
    static let limitedUseTokenHeader = HTTPField.Name("X-Sesame-Limited-Use-Token")!

    let authority: TokenAuthority
    let consumed: ConsumedAPITokens

    func check(_ proof: RelayProof, request: Request, body: ByteBuffer, caller: AccessTokenClaims) async throws {
        switch proof {
        case .none: return
        case .assertion: throw RelayErrors.proofRequired(proof)
        case .limitedUseToken:
            guard let token = request.headers[Self.limitedUseTokenHeader] else { throw RelayErrors.proofRequired(proof) }
            let claims: APITokenClaims
            do { claims = try await authority.verifyAPIToken(token) } catch { throw RelayErrors.proofInvalid("is not a valid API token") }
            guard claims.isLimitedUse else { throw RelayErrors.proofInvalid("is not single-use") }
            guard claims.appID == caller.appID, claims.subject.value == caller.subject.value else {
                throw RelayErrors.proofInvalid("was not issued to this install")
            }
            let digest = Data(SHA256.hash(data: body.readableBytesView)).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            guard claims.binding == digest else { throw RelayErrors.proofInvalid("is not bound to this request's body") }
            guard try await consumed.consumeForRelay(tokenID: claims.id.value, appID: claims.appID, expiresAt: claims.expiration.value) else {
                throw RelayErrors.proofInvalid("was already spent")
            }
        }
    }
}
