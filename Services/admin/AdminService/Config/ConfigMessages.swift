import Foundation
import Hummingbird
import SesameDomain
import SesameJSON
import SesameStorage

/// `POST /v1/admin/config/upload`.
struct UploadRequest: Codable, Sendable {
    let version: String
    let config: JSONValue
    /// Which tier each top-level key needs; keys not named need `attested`.
    let tiers: ConfigTiers?
    /// The percentage of installs that get this revision as a staged rollout (the rest keep what
    /// the pattern serves now); absent: every install.
    let rollout: Double?
}

struct UploadResponse: ChangeAnswer {
    let message: String
    /// The tiers below `attested` the upload names (absent when the config is attested-only).
    let tiers: ConfigTiers?
    let pattern: String
    let revision: Int64
    /// The staged rollout this upload began, if it named one.
    let rollout: RolloutInfo?
    let totalPatterns: Int
    let allPatterns: [String]
}

/// A staged rollout, as the API shows it.
struct RolloutInfo: Codable, Sendable {
    let id: String
    let pattern: String
    /// The revision rolled out.
    let revision: Int64
    /// What the installs outside the rollout get; absent when the pattern served nothing before.
    let previousRevision: Int64?
    /// The share of installs that get `revision` (while active).
    let percent: Double
    /// `active`, `paused`, `completed` or `rolled_back`.
    let state: String
    let createdAt: Date
    let updatedAt: Date
    /// How many distinct installs fetched each side (approximate, ±2 %; written by delivery every
    /// `SESAME_DELIVERY_RESYNC_INTERVAL`); absent where not counted (a change's answer).
    var installs: RolloutInstalls?

    init(_ stored: StoredRollout, installs: RolloutInstalls? = nil) {
        self.installs = installs
        id = stored.id.uuidString.lowercased()
        pattern = stored.pattern
        revision = stored.revision
        previousRevision = stored.previousRevision
        percent = RolloutBucket.percent(basisPoints: stored.basisPoints)
        state = stored.state
        createdAt = stored.createdAt
        updatedAt = stored.updatedAt
    }
}

/// How many distinct installs got a rollout's revision and the previous one.
struct RolloutInstalls: Codable, Sendable, Equatable {
    let included: Int
    let excluded: Int
}

/// `POST /v1/admin/config/rollout`.
struct RolloutRequest: Decodable {
    let version: String
    let action: RolloutAction
    /// For `widen`: the new percentage of installs.
    let percent: Double?
}

struct RolloutResponse: ResponseEncodable {
    let message: String
    let rollout: RolloutInfo
    /// The revision a rollback published (the previous config again, or a delete).
    let restoredAs: Int64?
}

/// `GET /v1/admin/config/rollouts`.
struct RolloutsResponse: ResponseEncodable {
    let rollouts: [RolloutInfo]
}

/// `GET /v1/admin/config/resolve`.
struct ResolveResponse: ResponseEncodable {
    let requestedVersion: String
    /// `serve`, `disabled` (a kill switch: the app shows `reason`) or `revoked`.
    let outcome: String
    var matchedPattern: String?
    var revision: Int64?
    var zeroKnowledge: Bool?
    /// Seconds, while an emergency revocation's forced-refresh window runs.
    var refreshAfter: Int?
    var reason: String?
    /// Which rule chose the revision: `published`, `rollout` or `deviceOverride`.
    var decidedBy: String?
    /// While a staged rollout of the matched pattern is in flight: which, its share, and (for the
    /// `install` asked about) whether that install is in it.
    var rollout: ResolvedRollout?
}

/// `ResolveResponse.rollout`.
struct ResolvedRollout: Encodable, Sendable {
    let id: String
    let percent: Double
    let paused: Bool
    /// Whether the install asked about gets the rollout's revision; absent when none was named
    /// (the answer then shows what an install outside the rollout gets).
    let included: Bool?
}

/// `GET /v1/admin/config/diff`: what changed from one revision to another.
struct ConfigDiffResponse: ResponseEncodable {
    let pattern: String
    let from: Int64
    let to: Int64
    let changes: [JSONChange]
    /// Whether the per-key tiers differ too.
    let tiersChanged: Bool
}

// MARK: Messages the document declares (generated into `Operations`; see openapi-generator-config.yaml)

/// `GET /v1/admin/config`.
typealias ManifestResponse = Operations.getManifest.Output.Ok.Body.jsonPayload
/// `DELETE /v1/admin/config`.
typealias DeleteResponse = Operations.deleteConfig.Output.Ok.Body.jsonPayload
/// `GET /v1/admin/config/history`.
typealias HistoryResponse = Operations.getHistory.Output.Ok.Body.jsonPayload
/// `POST /v1/admin/config/rollback`.
typealias RollbackRequest = Operations.rollback.Input.Body.jsonPayload
typealias RollbackResponse = Operations.rollback.Output.Ok.Body.jsonPayload
/// `GET /v1/admin/config/body`: a revision's config as stored (a zero-knowledge envelope as is).
typealias ConfigBodyResponse = Operations.getConfigBody.Output.Ok.Body.jsonPayload
/// `POST /v1/admin/config/overrides`: a tester's device gets a chosen revision.
typealias OverrideRequest = Operations.setOverride.Input.Body.jsonPayload
/// `POST` and `DELETE /v1/admin/config/overrides`.
typealias OverrideChangeResponse = Operations.setOverride.Output.Ok.Body.jsonPayload
/// `GET /v1/admin/config/overrides`.
typealias OverridesResponse = Operations.listOverrides.Output.Ok.Body.jsonPayload
typealias OverrideInfo = Operations.listOverrides.Output.Ok.Body.jsonPayload.overridesPayloadPayload

extension ManifestResponse: ResponseEncodable {}
extension DeleteResponse: ResponseEncodable {}
extension HistoryResponse: ResponseEncodable {}
extension RollbackResponse: ChangeAnswer {}
extension ConfigBodyResponse: ResponseEncodable {}
extension OverrideChangeResponse: ChangeAnswer {}
extension OverridesResponse: ResponseEncodable {}

extension OverrideInfo {
    init(_ stored: StoredOverride) {
        self.init(
            pattern: stored.pattern, install: stored.install, revision: stored.revision, label: stored.label, zeroKnowledge: stored.zeroKnowledge,
            createdAt: stored.createdAt)
    }
}
