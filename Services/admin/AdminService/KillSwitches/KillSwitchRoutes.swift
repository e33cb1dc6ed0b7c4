import Foundation
import Hummingbird
import SesameHTTP

/// `kill-switch` and `emergency-revoke`.
struct KillSwitchRoutes {
    let authenticator: AdminAuthenticator
    let switches: KillSwitchStore

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.post("kill-switch") { request, context -> KillSwitchResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            let body = try await request.decode(as: KillSwitchRequest.self, context: context)
            guard (1...100).contains(body.versions.count) else { throw APIError.invalidField("versions", "must list 1 to 100 versions") }
            var versions: [String] = []
            for version in body.versions where !versions.contains(try ConfigRoutes.validPattern(version)) {
                versions.append(try ConfigRoutes.validPattern(version))
            }
            let reason = body.reason?.trimmingCharacters(in: .whitespacesAndNewlines)
            // Kept in the audit log even when switching back on: bounded whenever it is given.
            if let reason, reason.count > 500 { throw APIError.invalidField("reason", "must be at most 500 characters") }
            if !body.enabled {
                guard let reason, !reason.isEmpty, reason.count <= 500 else {
                    throw APIError.invalidField("reason", "is required to switch a version off (at most 500 characters): apps show it")
                }
            }
            _ = try await switches.setKillSwitch(appID: appID, versions: versions, enabled: body.enabled, reason: reason, caller: caller)
            let list = versions.joined(separator: ", ")
            return KillSwitchResponse(
                message: body.enabled
                    ? "Switched \(list) back on." : "Switched \(list) off: apps at these versions get an error with the reason instead of a config.",
                versions: versions, enabled: body.enabled)
        }

        group.get("kill-switch") { request, _ -> KilledVersionsResponse in
            let (appID, _) = try await authenticator.app(of: request)
            return KilledVersionsResponse(killed: try await switches.killedVersions(appID: appID))
        }

        group.get("emergency-revoke") { request, _ -> RevocationsResponse in
            let (appID, _) = try await authenticator.app(of: request)
            return RevocationsResponse(revocations: try await switches.revocations(appID: appID))
        }

        group.post("emergency-revoke") { request, context -> EmergencyRevokeResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            let body = try await request.decode(as: EmergencyRevokeRequest.self, context: context)
            let pattern = try ConfigRoutes.validPattern(body.version)
            let ttl = body.forceRefreshTTL ?? 0
            guard (0...86_400).contains(ttl) else {
                throw APIError.invalidField("force_refresh_ttl", "must be from 0 to 86400 seconds")
            }
            let cutOff = try await switches.emergencyRevoke(appID: appID, pattern: pattern, forceRefreshTTL: ttl, caller: caller)
            return EmergencyRevokeResponse(
                message: "Revoked every token issued before now for versions '\(pattern)': those apps must attest again.",
                versionPattern: pattern, revokedBefore: cutOff, forceRefreshTTL: ttl)
        }
    }
}
