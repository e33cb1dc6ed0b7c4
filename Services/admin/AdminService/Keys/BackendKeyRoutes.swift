import Foundation
import Hummingbird
import SesameDomain
import SesameHTTP
import SesameStorage

/// `backend-keys`: create (shown once), list and revoke the keys the app's own backend presents to
/// Sesame's verification endpoints (`/v1/verify/…`). Owners only on the dashboard.
struct BackendKeyRoutes {
    let authenticator: AdminAuthenticator
    let backendKeys: BackendKeyStore

    /// `POST backend-keys` and the key made (shown once); the list; a revocation's answer. The
    /// document's `BackendKey` is the store's `BackendKeyListing` (see openapi-generator-config.yaml).
    typealias CreateRequest = Operations.createBackendKey.Input.Body.jsonPayload
    typealias CreateResponse = Operations.createBackendKey.Output.Ok.Body.jsonPayload
    typealias ListResponse = Operations.listBackendKeys.Output.Ok.Body.jsonPayload
    typealias RevokeResponse = Operations.revokeBackendKey.Output.Ok.Body.jsonPayload

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.post("backend-keys") { request, context -> CreateResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            let body = try await request.decode(as: CreateRequest.self, context: context)
            let name = body.name.trimmingCharacters(in: .whitespacesAndNewlines)
            // Counted in code points, as the OpenAPI document's maxLength counts.
            guard (1...100).contains(name.unicodeScalars.count), !name.contains(where: \.isNewline) else {
                throw APIError.invalidField("name", "must be 1 to 100 characters on one line, such as 'payments-api'")
            }
            let created: (key: String, listing: BackendKeyListing)
            do {
                created = try await backendKeys.create(appID: appID, name: name, audience: body.audience, actor: caller.auditName)
            } catch BackendKeyStore.CreateRefusal.unknownApp {
                throw AdminErrors.appNotFound
            } catch BackendKeyStore.CreateRefusal.audienceNotListed {
                throw APIError.invalidField("audience", "must be one of the app's API audiences (its policy's apiAudiences)")
            }
            return CreateResponse(
                backendKey: created.key, key: created.listing,
                message: "Save this backend key now: Sesame keeps only its hash. Your backend sends it to /v1/verify/…; it can do nothing else.")
        }

        group.get("backend-keys") { request, _ -> ListResponse in
            let (appID, _) = try await authenticator.app(of: request)
            return ListResponse(keys: try await backendKeys.list(appID: appID))
        }

        group.delete("backend-keys/{keyId}") { request, context -> RevokeResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            let text = context.parameters.get("keyId") ?? ""
            guard let keyID = UUID(uuidString: text),
                let revoked = try await backendKeys.revoke(keyID: keyID, appID: appID, actor: caller.auditName)
            else { throw AdminErrors.backendKeyNotFound }
            return RevokeResponse(key: revoked, message: "Backend key \(revoked.name) (\(revoked.hint)) is revoked; it is refused from now on.")
        }
    }
}

extension BackendKeyRoutes.CreateResponse: ResponseEncodable {}
extension BackendKeyRoutes.ListResponse: ResponseEncodable {}
extension BackendKeyRoutes.RevokeResponse: ResponseEncodable {}
