import Foundation
import Hummingbird
import Logging
import SesameConfiguration
import SesameDomain
import SesameHTTP
import SesameStorage

/// `debug-tokens`: create (shown once), list and revoke the app's debug tokens, which a Simulator,
/// a CI job or a developer's device exchanges at `POST /v1/auth/debug` for `debug`-tier tokens.
struct DebugTokenRoutes {
    let authenticator: AdminAuthenticator
    let debugTokens: DebugTokenStore
    let logger: Logger

    /// `POST debug-tokens`.
    struct CreateRequest: Decodable {
        let name: String
        /// Seconds, or a duration such as `12h` or `7d`: at most 30 days.
        let ttl: TTL

        struct TTL: Decodable {
            let duration: Duration?
            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let seconds = try? container.decode(Int64.self) {
                    duration = seconds >= 0 ? .seconds(seconds) : nil
                } else {
                    duration = Duration(written: try container.decode(String.self))
                }
            }
        }
    }

    /// The token made (shown once), the list and a revocation's answer. The document's `DebugToken`
    /// is the store's `DebugTokenSummary` (see openapi-generator-config.yaml).
    typealias CreateResponse = Operations.createDebugToken.Output.Ok.Body.jsonPayload
    typealias ListResponse = Operations.listDebugTokens.Output.Ok.Body.jsonPayload
    typealias RevokeResponse = Operations.revokeDebugToken.Output.Ok.Body.jsonPayload

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.post("debug-tokens") { request, context -> CreateResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            let body = try await request.decode(as: CreateRequest.self, context: context)
            let name = body.name.trimmingCharacters(in: .whitespacesAndNewlines)
            guard (1...100).contains(name.count), !name.contains(where: \.isNewline) else {
                throw APIError.invalidField("name", "must be 1 to 100 characters on one line, such as 'ci' or 'simulator-anna'")
            }
            guard let ttl = body.ttl.duration, ttl >= .seconds(60), ttl <= DebugTokenStore.maximumLifetime else {
                throw APIError.invalidField("ttl", "must be from 60 seconds to 30 days: seconds, or a duration such as 12h or 7d")
            }
            guard
                let created = try await debugTokens.create(
                    appID: appID, name: name, lifetime: ttl, actor: caller.auditName, createdByKey: caller.keyID)
            else { throw AdminErrors.debugTokenNameTaken(name) }
            return CreateResponse(
                debugToken: created.token, token: created.summary,
                message: "Save this debug token now: Sesame keeps only its hash. It expires in \(ttl.written); every use is audited as '\(name)'.")
        }

        group.get("debug-tokens") { request, _ -> ListResponse in
            let (appID, _) = try await authenticator.app(of: request)
            return ListResponse(tokens: try await debugTokens.list(appID: appID))
        }

        group.delete("debug-tokens/{nameOrID}") { request, context -> RevokeResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            let target = context.parameters.get("nameOrID") ?? ""
            // Delivery refuses the access tokens it earned from now on (the revocation notes the app
            // as changed), as it does a revoked device's.
            let revoked = try await debugTokens.revoke(appID: appID, nameOrID: target, actor: caller.auditName)
            guard let revoked else { throw AdminErrors.debugTokenNotFound(target) }
            return RevokeResponse(
                token: revoked, message: "Debug token '\(revoked.name)' is revoked: no new exchange, and the access tokens it earned are refused.")
        }
    }
}

extension DebugTokenRoutes.CreateResponse: ResponseEncodable {}
extension DebugTokenRoutes.ListResponse: ResponseEncodable {}
extension DebugTokenRoutes.RevokeResponse: ResponseEncodable {}
