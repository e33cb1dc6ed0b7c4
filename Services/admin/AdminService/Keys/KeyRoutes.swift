import Foundation
import Hummingbird
import SesameDomain
import SesameHTTP

/// `keys` (list), `keys/create` and `keys/revoke`.
struct KeyRoutes {
    let authenticator: AdminAuthenticator
    let keys: ProvisioningKeyStore
    let approvals: ChangeApprovals

    /// `GET keys`.
    typealias ListResponse = Operations.listKeys.Output.Ok.Body.jsonPayload

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        approvals.register(
            GuardedAccess.key.key, PendingKey.self,
            prepare: { _, pending in ("make provisioning key \(pending.name) (\(pending.keyId.uuidString.lowercased()))", nil) },
            apply: { appID, pending, _ in
                guard try await keys.activate(for: pending.proposal, appID: appID) else { throw AdminErrors.keyNotFound }
                return AccessApproved(message: "Key \(pending.name) is approved: it is accepted from now on.")
            })

        group.get("keys") { request, _ -> ListResponse in
            let (appID, _) = try await authenticator.app(of: request)
            return ListResponse(keys: try await keys.list(appID: appID))
        }

        group.post("keys/create") { request, context -> Response in
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
            let keyName = name.isEmpty ? "unnamed" : name
            // While the app's two-person rule is on, a key is one more approver: made waiting for a second person.
            let pending = try await approvals.accessGuarded(appID: app.description, caller: caller) ? UUID() : nil
            guard let created = try await keys.create(for: app, name: keyName, caller: caller, register: caller == .operator, pendingProposal: pending)
            else { throw AdminErrors.appNotFound }
            var answer = CreateKeyResponse(
                key: created.key, keyId: created.summary.keyId, name: created.summary.name, appId: app.description,
                message: "Save this key now: Sesame keeps only its hash and cannot show it again. Give it to the CLI as SESAME_KEY.")
            guard let pending else { return try answer.response(from: request, context: context) }
            answer.proposal = try await approvals.proposeAccess(
                .key, id: pending, appID: app.description, body: PendingKey(proposal: pending, keyId: created.summary.keyId, name: keyName),
                summary: "make provisioning key \(keyName) (\(created.summary.keyId.uuidString.lowercased()))", caller: caller)
            answer.message += " It is refused until a second person approves change \(pending.uuidString.lowercased()) (the app's two-person rule)."
            var response = try answer.response(from: request, context: context)
            response.status = .accepted
            return response
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

extension KeyRoutes.ListResponse: ResponseEncodable {}
