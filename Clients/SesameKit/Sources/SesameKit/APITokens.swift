import Crypto
import Foundation

/// A short-lived token for the app's own API: send it with a request to that API, whose backend
/// verifies it offline with Sesame's JWKS (see the README's "Protecting your own API").
public struct APIToken: Sendable, Equatable {
    /// The JWT.
    public let token: String
    /// The API it is for: one of the app's policy `apiAudiences`.
    public let audience: String
    /// When the backend stops accepting it.
    public let expiresAt: Date
    /// Whether it is single use: its backend redeems it once with Sesame (`limitedUseToken`).
    public let isLimitedUse: Bool

    /// The `Authorization` header value: `Bearer <token>`.
    public var authorizationHeader: String { "Bearer " + token }
}

extension SesameClient {
    /// A token for the app's own API named `audience` (it may be left out when the app's policy
    /// lists exactly one), proving to that API's backend that the genuine app on an attested
    /// device asks. With `binding`, the token carries the SHA-256 of it (`bnd`), so the backend can
    /// hold it to that value (the app's session token, the request body); the value itself never
    /// leaves the device. Ask for a new token per request or when `expiresAt` nears: each lives
    /// five minutes.
    /// - Throws: `.server(code: "audience_not_allowed", …)` for an audience the policy does not
    ///   list, `.versionDisabled` for a version switched off, and what `fetchConfig` throws.
    public func apiToken(for audience: String? = nil, boundTo binding: Data? = nil) async throws(SesameError) -> APIToken {
        try await requestAPIToken(audience: audience, binding: binding, limitedUse: false)
    }

    /// A single-use token for the app's own API, for a sensitive action (a purchase, an account
    /// change): its backend redeems it with Sesame (`POST /v1/verify/consume`) and accepts it only
    /// the first time, so a captured request cannot be replayed. Otherwise as `apiToken`; bind it
    /// to the action's request body so it cannot be spent on another.
    public func limitedUseToken(for audience: String? = nil, boundTo binding: Data? = nil) async throws(SesameError) -> APIToken {
        try await requestAPIToken(audience: audience, binding: binding, limitedUse: true)
    }

    private func requestAPIToken(audience: String?, binding: Data?, limitedUse: Bool) async throws(SesameError) -> APIToken {
        let request = APITokenRequest(
            audience: audience, binding: binding.map { Self.base64URL(Data(SHA256.hash(data: $0))) }, limitedUse: limitedUse ? true : nil)
        let response = try await authorized("POST", "v1/auth/api-token", json: request)
        guard response.status == 200 else { throw Self.refused(response) }
        guard let reply = try? JSONDecoder().decode(APITokenReply.self, from: response.body) else {
            throw .server(code: "invalid_response", message: "The API token reply cannot be read.")
        }
        return APIToken(
            token: reply.token, audience: reply.audience, expiresAt: clock.now().addingTimeInterval(TimeInterval(reply.expiresIn)),
            isLimitedUse: reply.limitedUse ?? false)
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

struct APITokenRequest: Encodable, Sendable {
    let audience: String?
    let binding: String?
    let limitedUse: Bool?
}

struct APITokenReply: Decodable {
    let token: String
    let expiresIn: Int
    let audience: String
    let limitedUse: Bool?
}
