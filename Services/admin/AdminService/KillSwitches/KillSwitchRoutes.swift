import Foundation
import Hummingbird
import SesameDomain
import SesameHTTP

/// `kill-switch` and `emergency-revoke`: both under the two-person rule when the app's policy says so.
struct KillSwitchRoutes {
    let authenticator: AdminAuthenticator
    let switches: KillSwitchStore
    let approvals: ChangeApprovals

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        approvals.register(
            .killSwitch, KillSwitchRequest.self,
            prepare: { appID, body in
                let (versions, _) = try Self.validKillSwitch(body)
                return ((body.enabled ? "switch back on " : "switch off ") + versions.joined(separator: ", "),
                        try await switches.standing(appID: appID, versions: versions))
            },
            apply: { appID, body, caller in try await killSwitch(appID: appID, body, caller: caller) })
        approvals.register(
            .revocation, EmergencyRevokeRequest.self,
            prepare: { appID, body in
                let pattern = try Self.validRevocation(body).pattern
                return ("revoke every token issued until then for versions '\(pattern)'", try await switches.latestRevocation(appID: appID, pattern: pattern))
            },
            apply: { appID, body, caller in try await emergencyRevoke(appID: appID, body, caller: caller) })

        group.post("kill-switch") { request, context -> Response in
            let (appID, caller) = try await authenticator.app(of: request)
            let body = try await request.decode(as: KillSwitchRequest.self, context: context)
            _ = try Self.validKillSwitch(body)
            return try await approvals.handle(.killSwitch, appID: appID, caller: caller, body: body, request: request, context: context)
        }

        group.get("kill-switch") { request, _ -> KilledVersionsResponse in
            let (appID, _) = try await authenticator.app(of: request)
            return KilledVersionsResponse(killed: try await switches.killedVersions(appID: appID))
        }

        group.get("emergency-revoke") { request, _ -> RevocationsResponse in
            let (appID, _) = try await authenticator.app(of: request)
            return RevocationsResponse(revocations: try await switches.revocations(appID: appID))
        }

        group.post("emergency-revoke") { request, context -> Response in
            let (appID, caller) = try await authenticator.app(of: request)
            let body = try await request.decode(as: EmergencyRevokeRequest.self, context: context)
            _ = try Self.validRevocation(body)
            return try await approvals.handle(.revocation, appID: appID, caller: caller, body: body, request: request, context: context)
        }
    }

    /// The versions to switch and the reason, or the field that is wrong.
    static func validKillSwitch(_ body: KillSwitchRequest) throws -> (versions: [String], reason: String?) {
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
        return (versions, reason)
    }

    func killSwitch(appID: String, _ body: KillSwitchRequest, caller: Caller) async throws -> KillSwitchResponse {
        let (versions, reason) = try Self.validKillSwitch(body)
        _ = try await switches.setKillSwitch(appID: appID, versions: versions, enabled: body.enabled, reason: reason, caller: caller)
        let list = versions.joined(separator: ", ")
        return KillSwitchResponse(
            message: body.enabled
                ? "Switched \(list) back on." : "Switched \(list) off: apps at these versions get an error with the reason instead of a config.",
            versions: versions, enabled: body.enabled)
    }

    static func validRevocation(_ body: EmergencyRevokeRequest) throws -> (pattern: String, ttl: Int) {
        let pattern = try ConfigRoutes.validPattern(body.version)
        let ttl = body.force_refresh_ttl ?? 0
        guard (0...86_400).contains(ttl) else {
            throw APIError.invalidField("force_refresh_ttl", "must be from 0 to 86400 seconds")
        }
        return (pattern, ttl)
    }

    func emergencyRevoke(appID: String, _ body: EmergencyRevokeRequest, caller: Caller) async throws -> EmergencyRevokeResponse {
        let (pattern, ttl) = try Self.validRevocation(body)
        let cutOff = try await switches.emergencyRevoke(appID: appID, pattern: pattern, forceRefreshTTL: ttl, caller: caller)
        return EmergencyRevokeResponse(
            message: "Revoked every token issued before now for versions '\(pattern)': those apps must attest again.",
            versionPattern: pattern, revokedBefore: cutOff, forceRefreshTTL: ttl)
    }
}
