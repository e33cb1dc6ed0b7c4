import Foundation
import Hummingbird
import SesameApple
import SesameDomain
import SesameHTTP

/// An app's DeviceCheck key as the API shows it (never the key), and what Apple made of it.
typealias AppleCredentials = Components.Schemas.AppleCredentials
typealias AppleCredentialsCheck = Components.Schemas.AppleCredentialsCheck

/// `apple/credentials`: set (checked with Apple at once), show, remove, and check again the app's
/// DeviceCheck key, which signs Sesame's calls to Apple for the app. Owners only on the dashboard;
/// setting and removing it are under the two-person rule when the policy guards `apple_key` (a
/// proposal never shows the private key).
struct AppleCredentialRoutes {
    let authenticator: AdminAuthenticator
    let credentials: AppleCredentialStore
    let keys: DeviceCheckKeys
    let deviceCheck: DeviceCheckClient
    let approvals: ChangeApprovals
    /// Calls to Apple one app's people may make by setting or checking its key: 5 at once, then one
    /// every 12 s. Apple rate-limits the team's key, and the key's real work (bans, receipts) must not
    /// be starved by someone pressing "check"; past it `429 rate_limited` with `Retry-After`, before
    /// anything is stored. Per admin replica.
    let appleCalls = RateLimiter(.init(rate: 1.0 / 12, burst: 5), maximumKeys: 10_000)

    typealias SetRequest = Operations.setAppleCredentials.Input.Body.jsonPayload
    typealias SetResponse = Operations.setAppleCredentials.Output.Ok.Body.jsonPayload
    typealias RemoveResponse = Operations.removeAppleCredentials.Output.Ok.Body.jsonPayload

    /// A removal, as a proposal stores it.
    struct Removal: Codable, Sendable {}

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.get("apple/credentials") { request, _ -> AppleCredentials in
            try await listing(appID: try await authenticator.app(of: request).appID)
        }

        approvals.register(
            .appleKey, SetRequest.self,
            prepare: { appID, body in
                let key = try await key(body, appID: appID)
                return ("set the DeviceCheck key to \(key.keyID)", try await currentKeyID(appID: appID))
            },
            apply: { appID, body, caller in try await set(body, appID: appID, caller: caller) },
            shown: { body in SetRequest(keyId: body.keyId, privateKey: "(withheld)") })
        approvals.register(
            .appleKey, Removal.self,
            prepare: { appID, _ in ("remove the DeviceCheck key", try await currentKeyID(appID: appID)) },
            apply: { appID, _, caller in
                guard try await credentials.remove(appID: appID, caller: caller) else { throw AdminErrors.appleCredentialsNotSet }
                return RemoveResponse(message: "The DeviceCheck key of \(appID) is removed: Sesame asks Apple nothing for the app from now on.")
            },
            as: "remove")

        group.put("apple/credentials") { request, context -> Response in
            let (appID, caller) = try await authenticator.app(of: request)
            let body = try await request.decode(as: SetRequest.self, context: context)
            _ = try await key(body, appID: appID)
            try appleCalls.enforce(appID)
            return try await approvals.handle(.appleKey, appID: appID, caller: caller, body: body, request: request, context: context)
        }

        group.delete("apple/credentials") { request, context -> Response in
            let (appID, caller) = try await authenticator.app(of: request)
            guard try await currentKeyID(appID: appID) != nil else { throw AdminErrors.appleCredentialsNotSet }
            return try await approvals.handle(.appleKey, variant: "remove", appID: appID, caller: caller, body: Removal(), request: request, context: context)
        }

        group.post("apple/credentials/check") { request, _ -> AppleCredentials in
            let (appID, _) = try await authenticator.app(of: request)
            guard let key = try await keys.key(appID: appID) else { throw AdminErrors.appleCredentialsNotSet }
            try appleCalls.enforce(appID)
            _ = try await checkAndRecord(key, appID: appID)
            return try await listing(appID: appID)
        }
    }

    /// The key `body` describes for `appID`'s team, or the field that is wrong.
    private func key(_ body: SetRequest, appID: String) async throws -> DeviceCheckKey {
        guard let teamID = try await credentials.teamID(of: appID) else { throw AdminErrors.appNotFound }
        do throws(DeviceCheckKey.Invalid) {
            return try DeviceCheckKey(keyID: body.keyId, teamID: teamID, privateKeyPEM: body.privateKey)
        } catch {
            throw APIError.invalidField(error.field, error.reason)
        }
    }

    /// Sets the key and asks Apple about it at once.
    private func set(_ body: SetRequest, appID: String, caller: Caller) async throws -> SetResponse {
        let key = try await key(body, appID: appID)
        try await credentials.set(key, appID: appID, caller: caller)
        let check = try await checkAndRecord(key, appID: appID)
        return SetResponse(credentials: try await listing(appID: appID), message: "The DeviceCheck key \(key.keyID) is set for \(appID). \(check.message)")
    }

    /// The id of the key set now (a proposal's base: one made against another key is stale).
    private func currentKeyID(appID: String) async throws -> String? {
        try await credentials.listing(appID: appID)?.keyId
    }

    /// The key of `appID` as set, or `404 apple_credentials_not_set`.
    private func listing(appID: String) async throws -> AppleCredentials {
        guard let listing = try await credentials.listing(appID: appID) else { throw AdminErrors.appleCredentialsNotSet }
        return listing
    }

    /// Asks Apple about `key` (bounded by the outbound client's deadline) and keeps the answer.
    private func checkAndRecord(_ key: DeviceCheckKey, appID: String) async throws -> DeviceCheckClient.CredentialCheck {
        let check = await deviceCheck.check(key)
        try await credentials.record(check, keyID: key.keyID, appID: appID)
        return check
    }
}

extension AppleCredentials: ResponseEncodable {}
extension AppleCredentialRoutes.SetResponse: ChangeAnswer {}
extension AppleCredentialRoutes.RemoveResponse: ChangeAnswer {}
