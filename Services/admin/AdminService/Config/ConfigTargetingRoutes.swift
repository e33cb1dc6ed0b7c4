import Foundation
import Hummingbird
import SesameDomain
import SesameHTTP
import SesameStorage

/// `config/rollout`, `config/rollouts` and `config/overrides`: who gets which revision of a
/// pattern, beyond the pattern itself (a share of installs, one named install).
struct ConfigTargetingRoutes {
    let authenticator: AdminAuthenticator
    let configs: ConfigStore
    let approvals: ChangeApprovals

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.get("config/rollouts") { request, _ -> RolloutsResponse in
            let (appID, _) = try await authenticator.app(of: request)
            let pattern = try request.uri.queryParameters.get("version").map { try ConfigRoutes.validConfigPattern(String($0)) }
            return RolloutsResponse(rollouts: try await configs.rollouts(appID: appID, pattern: pattern).map { RolloutInfo($0.rollout, installs: $0.installs) })
        }

        group.post("config/rollout") { request, context -> RolloutResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            let body = try await request.decode(as: RolloutRequest.self, context: context)
            let pattern = try ConfigRoutes.validConfigPattern(body.version)
            let basisPoints = try body.percent.map { try Self.validRolloutShare($0, upload: false) }
            let (rollout, restoredAs) = try await configs.changeRollout(
                appID: appID, pattern: pattern, action: body.action, basisPoints: basisPoints, caller: caller)
            return RolloutResponse(message: Self.describe(body.action, rollout, restoredAs: restoredAs), rollout: RolloutInfo(rollout), restoredAs: restoredAs)
        }

        group.get("config/overrides") { request, _ -> OverridesResponse in
            let (appID, _) = try await authenticator.app(of: request)
            return OverridesResponse(overrides: try await configs.overrides(appID: appID).map(OverrideInfo.init))
        }

        // Serving one install a revision of its owner's choice is a rollback for that install: the
        // policy's `rollback` rule guards it (else one member pins a victim's install to an old
        // config the rule would not let them republish).
        approvals.register(
            .rollback, OverrideRequest.self,
            prepare: { _, body in
                let (pattern, install, _) = try Self.validOverride(body)
                return ("give the install \(install) revision \(body.revision) of '\(pattern)'", nil)
            },
            apply: { appID, body, caller in try await setOverride(appID: appID, body, caller: caller) },
            as: "override")

        group.post("config/overrides") { request, context -> Response in
            let (appID, caller) = try await authenticator.app(of: request)
            let body = try await request.decode(as: OverrideRequest.self, context: context)
            _ = try Self.validOverride(body)
            return try await approvals.handle(.rollback, variant: "override", appID: appID, caller: caller, body: body, request: request, context: context)
        }

        group.delete("config/overrides") { request, _ -> OverrideChangeResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            guard let version = request.uri.queryParameters.get("version"), let install = request.uri.queryParameters.get("install") else {
                throw APIError.invalidRequest("Name the override with ?version=PATTERN&install=KEYID.")
            }
            let pattern = try ConfigRoutes.validConfigPattern(String(version))
            guard try await configs.removeOverride(appID: appID, pattern: pattern, install: try Self.validInstall(String(install)), caller: caller) else {
                throw AdminErrors.overrideNotFound(pattern)
            }
            return OverrideChangeResponse(message: "The install gets what '\(pattern)' serves everyone again.")
        }
    }

    /// The override's pattern, install and label, checked.
    static func validOverride(_ body: OverrideRequest) throws -> (pattern: String, install: String, label: String) {
        let pattern = try ConfigRoutes.validConfigPattern(body.version)
        let install = try Self.validInstall(body.install)
        // Checked here, not only by the store: a proposal is made before anything is looked up.
        guard body.revision >= 1 else { throw APIError.invalidField("revision", "must be a revision of the pattern, 1 or more") }
        let label = body.label.trimmingCharacters(in: .whitespaces)
        guard (1...100).contains(label.count), !label.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw APIError.invalidField("label", "must name the device in 1 to 100 characters, such as \"Ana's iPhone\"")
        }
        return (pattern, install, label)
    }

    func setOverride(appID: String, _ body: OverrideRequest, caller: Caller) async throws -> OverrideChangeResponse {
        let (pattern, install, label) = try Self.validOverride(body)
        try await configs.setOverride(appID: appID, pattern: pattern, install: install, revision: body.revision, label: label, caller: caller)
        return OverrideChangeResponse(
            message: "The install '\(label)' now gets revision \(body.revision) of '\(pattern)', whatever is published or rolling out there.")
    }

    /// A rollout's share in basis points from a percentage: 0 up to (not including, for an
    /// upload: that is a plain upload) 100, in steps of 0.01.
    static func validRolloutShare(_ percent: Double, upload: Bool) throws -> Int {
        guard let basisPoints = RolloutBucket.basisPoints(percent: percent), !upload || basisPoints < RolloutBucket.count else {
            throw APIError.invalidField(
                upload ? "rollout" : "percent",
                upload
                    ? "must be a percentage from 0 to below 100, in steps of 0.01 (to publish to every install, leave it out)"
                    : "must be a percentage from 0 to 100, in steps of 0.01")
        }
        return basisPoints
    }

    /// An install as tokens name it: a device's key id (base64url) or a debug token's `debug:<id>`.
    static func validInstall(_ text: String) throws -> String {
        guard (1...200).contains(text.utf8.count), text.utf8.allSatisfy({ byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":")
        }) else {
            throw APIError.invalidField("install", "must be a device's key id (base64url), as 'sesame devices list' shows it")
        }
        return text
    }

    /// What a rollout change did, for people.
    static func describe(_ action: RolloutAction, _ rollout: StoredRollout, restoredAs: Int64?) -> String {
        let share = RolloutBucket.percentText(basisPoints: rollout.basisPoints)
        let pattern = rollout.pattern
        return switch action {
        case .widen: "Revision \(rollout.revision) of '\(pattern)' now reaches \(share) % of installs\(rollout.paused ? " once resumed" : "")."
        case .pause: "Paused: every install of '\(pattern)' gets \(rollout.previousRevision.map { "revision \($0)" } ?? "what it would without this pattern") until you resume."
        case .resume: "Resumed: revision \(rollout.revision) of '\(pattern)' reaches \(share) % of installs again (the same ones)."
        case .complete: "Completed: every install of '\(pattern)' gets revision \(rollout.revision)."
        case .rollback:
            if let previous = rollout.previousRevision, let restoredAs {
                "Rolled back: every install of '\(pattern)' gets the config of revision \(previous) again, as revision \(restoredAs)."
            } else {
                "Rolled back: '\(pattern)' served nothing before the rollout and is deleted again (revision \(restoredAs ?? 0))."
            }
        }
    }
}
