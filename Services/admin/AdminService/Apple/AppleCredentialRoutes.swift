import Foundation
import Hummingbird
import SesameApple
import SesameHTTP

/// An app's DeviceCheck key as the API shows it (never the key), and what Apple made of it.
typealias AppleCredentials = Components.Schemas.AppleCredentials
typealias AppleCredentialsCheck = Components.Schemas.AppleCredentialsCheck

/// `apple/credentials`: set (checked with Apple at once), show, remove, and check again the app's
/// DeviceCheck key, which signs Sesame's calls to Apple for the app. Owners only on the dashboard.
struct AppleCredentialRoutes {
    let authenticator: AdminAuthenticator
    let credentials: AppleCredentialStore
    let keys: DeviceCheckKeys
    let deviceCheck: DeviceCheckClient
    /// Calls to Apple one app's people may make by setting or checking its key: 5 at once, then one
    /// every 12 s. Apple rate-limits the team's key, and the key's real work (bans, receipts) must not
    /// be starved by someone pressing "check"; past it `429 rate_limited` with `Retry-After`, before
    /// anything is stored. Per admin replica.
    let appleCalls = RateLimiter(.init(rate: 1.0 / 12, burst: 5), maximumKeys: 10_000)

    typealias SetRequest = Operations.setAppleCredentials.Input.Body.jsonPayload
    typealias SetResponse = Operations.setAppleCredentials.Output.Ok.Body.jsonPayload
    typealias RemoveResponse = Operations.removeAppleCredentials.Output.Ok.Body.jsonPayload

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.get("apple/credentials") { request, _ -> AppleCredentials in
            try await listing(appID: try await authenticator.app(of: request).appID)
        }

        group.put("apple/credentials") { request, context -> SetResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            let body = try await request.decode(as: SetRequest.self, context: context)
            try appleCalls.enforce(appID)
            guard let teamID = try await credentials.teamID(of: appID) else { throw AdminErrors.appNotFound }
            let key: DeviceCheckKey
            do throws(DeviceCheckKey.Invalid) {
                key = try DeviceCheckKey(keyID: body.keyId, teamID: teamID, privateKeyPEM: body.privateKey)
            } catch {
                throw APIError.invalidField(error.field, error.reason)
            }
            try await credentials.set(key, appID: appID, caller: caller)
            let check = try await checkAndRecord(key, appID: appID)
            return SetResponse(credentials: try await listing(appID: appID), message: "The DeviceCheck key \(key.keyID) is set for \(appID). \(check.message)")
        }

        group.delete("apple/credentials") { request, _ -> RemoveResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            guard try await credentials.remove(appID: appID, caller: caller) else { throw AdminErrors.appleCredentialsNotSet }
            return RemoveResponse(message: "The DeviceCheck key of \(appID) is removed: Sesame asks Apple nothing for the app from now on.")
        }

        group.post("apple/credentials/check") { request, _ -> AppleCredentials in
            let (appID, _) = try await authenticator.app(of: request)
            guard let key = try await keys.key(appID: appID) else { throw AdminErrors.appleCredentialsNotSet }
            try appleCalls.enforce(appID)
            _ = try await checkAndRecord(key, appID: appID)
            return try await listing(appID: appID)
        }
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
extension AppleCredentialRoutes.SetResponse: ResponseEncodable {}
extension AppleCredentialRoutes.RemoveResponse: ResponseEncodable {}
