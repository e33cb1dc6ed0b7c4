import Foundation
import OpenAPIRuntime
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

/// `POST /v1/admin/config/rollout`.
struct RolloutRequest: Decodable {
    let version: String
    let action: RolloutAction
    /// For `widen`: the new percentage of installs.
    let percent: Double?
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
/// `POST /v1/admin/config/upload`'s answer.
typealias UploadResponse = Operations.uploadConfig.Output.Ok.Body.jsonPayload
/// `DELETE /v1/admin/config`.
typealias DeleteResponse = Operations.deleteConfig.Output.Ok.Body.jsonPayload
/// `GET /v1/admin/config/history`.
typealias HistoryResponse = Operations.getHistory.Output.Ok.Body.jsonPayload
/// `POST /v1/admin/config/rollback`.
typealias RollbackRequest = Operations.rollback.Input.Body.jsonPayload
typealias RollbackResponse = Operations.rollback.Output.Ok.Body.jsonPayload
/// `GET /v1/admin/config/body`: a revision's config as stored (a zero-knowledge envelope as is).
typealias ConfigBodyResponse = Operations.getConfigBody.Output.Ok.Body.jsonPayload
/// `GET /v1/admin/config/resolve`.
typealias ResolveResponse = Operations.resolveConfig.Output.Ok.Body.jsonPayload
typealias ResolvedRollout = Operations.resolveConfig.Output.Ok.Body.jsonPayload.rolloutPayload
/// A staged rollout, as the API shows it, and how many distinct installs got each side of it.
typealias RolloutInfo = Components.Schemas.Rollout
typealias RolloutInstalls = Components.Schemas.RolloutInstalls
/// `POST /v1/admin/config/rollout`'s answer, and `GET /v1/admin/config/rollouts`.
typealias RolloutResponse = Operations.changeRollout.Output.Ok.Body.jsonPayload
typealias RolloutsResponse = Operations.listRollouts.Output.Ok.Body.jsonPayload
/// `POST /v1/admin/config/overrides`: a tester's device gets a chosen revision; its answer (and
/// `DELETE`'s); `GET` lists them.
typealias OverrideRequest = Operations.setOverride.Input.Body.jsonPayload
typealias OverrideChangeResponse = Operations.setOverride.Output.Ok.Body.jsonPayload
typealias OverridesResponse = Operations.listOverrides.Output.Ok.Body.jsonPayload
typealias OverrideInfo = Operations.listOverrides.Output.Ok.Body.jsonPayload.overridesPayloadPayload

extension ManifestResponse: ResponseEncodable {}
extension UploadResponse: ChangeAnswer {}
extension DeleteResponse: ResponseEncodable {}
extension HistoryResponse: ResponseEncodable {}
extension RollbackResponse: ChangeAnswer {}
extension ConfigBodyResponse: ResponseEncodable {}
extension ResolveResponse: ResponseEncodable {}
extension RolloutResponse: ResponseEncodable {}
extension RolloutsResponse: ResponseEncodable {}
extension OverrideChangeResponse: ChangeAnswer {}
extension OverridesResponse: ResponseEncodable {}

extension RolloutInfo {
    init(_ stored: StoredRollout, installs: RolloutInstalls? = nil) {
        self.init(
            id: stored.id.uuidString.lowercased(), pattern: stored.pattern, revision: stored.revision, previousRevision: stored.previousRevision,
            percent: RolloutBucket.percent(basisPoints: stored.basisPoints), state: .init(stringLiteral: stored.state), createdAt: stored.createdAt,
            updatedAt: stored.updatedAt, installs: installs)
    }
}

extension OverrideInfo {
    init(_ stored: StoredOverride) {
        self.init(
            pattern: stored.pattern, install: stored.install, revision: stored.revision, label: stored.label, zeroKnowledge: stored.zeroKnowledge,
            createdAt: stored.createdAt)
    }
}
