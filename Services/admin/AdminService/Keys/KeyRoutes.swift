import Foundation
import Hummingbird
import SesameDomain
import SesameHTTP

/// `keys` (list), `keys/create` and `keys/revoke`.
struct KeyRoutes {
    let authenticator: AdminAuthenticator
    let keys: ProvisioningKeyStore

    struct ListResponse: ResponseEncodable {
        let keys: [ProvisioningKeyListing]
    }

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.get("keys") { request, _ -> ListResponse in
            let (appID, _) = try await authenticator.app(of: request)
            return ListResponse(keys: try await keys.list(appID: appID))
        }

        group.post("keys/create") { request, context -> CreateKeyResponse in
            let caller = try await authenticator.caller(of: request)
            let body = try await request.decode(as: CreateKeyRequest.self, context: context)
            let app: AppIdentifier
            do {
                app = try AppIdentifier(teamID: body.teamId, bundleID: body.bundleId)
            } catch let error as AppIdentifier.Invalid {
                throw APIError.invalidRequest(error.description + ".")
            }
            let name = (body.keyName ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            guard name.count <= 100 else { throw APIError.invalidField("keyName", "must be at most 100 characters") }
            // A key manages its own app only; the operator may register new ones.
            if let appID = caller.appID, appID != app.description { throw AdminErrors.appNotFound }
            guard
                let created = try await keys.create(
                    for: app, name: name.isEmpty ? "unnamed" : name, caller: caller, register: caller == .operator)
            else { throw AdminErrors.appNotFound }
            return CreateKeyResponse(
                key: created.key, keyId: created.summary.keyId, name: created.summary.name, appId: app.description,
                message: "Save this key now: Sesame keeps only its hash and cannot show it again. Give it to the CLI as SESAME_KEY.")
        }

        group.post("keys/revoke") { request, context -> RevokeKeyResponse in
            let caller = try await authenticator.caller(of: request)
            let body = try await request.decode(as: RevokeKeyRequest.self, context: context)
            guard body.key != nil || body.keyId != nil else { throw APIError.invalidField("key", "or \"keyId\" names the key to revoke") }
            guard let revoked = try await keys.revoke(key: body.key, keyID: body.keyId, appID: caller.appID, caller: caller) else { throw AdminErrors.keyNotFound }
            return RevokeKeyResponse(keyId: revoked.keyId, message: "Key \(revoked.name) (\(revoked.hint)) is revoked; it is refused from now on.")
        }
    }
}
