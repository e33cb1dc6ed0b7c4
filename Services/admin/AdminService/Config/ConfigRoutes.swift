import Foundation
import OpenAPIRuntime
import Hummingbird
import SesameDomain
import SesameHTTP
import SesameJSON
import SesameStorage
import SesameVault

/// `config/…`: upload, view, delete, history, rollback, resolve (staged rollouts and device
/// overrides: `ConfigTargetingRoutes`).
struct ConfigRoutes {
    let authenticator: AdminAuthenticator
    let configs: ConfigStore
    let maxConfigBytes: Int
    let approvals: ChangeApprovals

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        approvals.register(
            .publish, UploadRequest.self,
            prepare: { appID, body in
                let upload = try validUpload(body)
                let share = upload.rolloutBasisPoints.map { " to \(RolloutBucket.percentText(basisPoints: $0)) % of installs" } ?? ""
                return ("publish '\(upload.pattern)' (\(upload.document.count) bytes\(upload.zeroKnowledge ? ", zero-knowledge" : ""))\(share)",
                        try await configs.liveRevision(appID: appID, pattern: upload.pattern).map(String.init) ?? "none")
            },
            apply: { appID, body, caller in try await publish(appID: appID, body, caller: caller) })
        approvals.register(
            .rollback, RollbackRequest.self,
            prepare: { appID, body in
                let pattern = try Self.validConfigPattern(body.version)
                return ("roll '\(pattern)' back to the config of revision \(body.revision)",
                        try await configs.liveRevision(appID: appID, pattern: pattern).map(String.init) ?? "none")
            },
            apply: { appID, body, caller in try await rollback(appID: appID, body, caller: caller) })

        // An upload: the body decoded once here; checked once (`validUpload`, in `publish` made now, or
        // in `prepare` when proposed); then stored with its audit entry in one transaction
        // (`ConfigStore.upload`). A proposal's request is decoded again when approved.
        group.post("config/upload") { request, context -> Response in
            let (appID, caller) = try await authenticator.app(of: request)
            let body = try await request.decode(as: UploadRequest.self, context: context)
            return try await approvals.handle(.publish, appID: appID, caller: caller, body: body, request: request, context: context)
        }

        group.get("config") { request, _ -> ManifestResponse in
            let (appID, _) = try await authenticator.app(of: request)
            return ManifestResponse(appId: appID, patterns: try await configs.manifest(appID: appID))
        }

        group.delete("config") { request, _ -> DeleteResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            let pattern = try request.uri.queryParameters.get("version").map { try Self.validConfigPattern(String($0)) }
            let deleted = try await configs.delete(appID: appID, pattern: pattern, caller: caller)
            if let pattern, deleted.isEmpty { throw AdminErrors.patternNotFound(pattern) }
            let message =
                pattern == nil
                ? "Deleted every pattern (\(deleted.count)): apps now get no config until you upload one."
                : "Deleted version pattern '\(deleted[0])'; its history is kept."
            return DeleteResponse(message: message, deleted: deleted)
        }

        group.get("config/history") { request, _ -> HistoryResponse in
            let (appID, _) = try await authenticator.app(of: request)
            let pattern = try request.uri.queryParameters.get("version").map { try Self.validConfigPattern(String($0)) }
            return HistoryResponse(revisions: try await configs.history(appID: appID, pattern: pattern))
        }

        group.post("config/rollback") { request, context -> Response in
            let (appID, caller) = try await authenticator.app(of: request)
            let body = try await request.decode(as: RollbackRequest.self, context: context)
            _ = try Self.validConfigPattern(body.version)
            return try await approvals.handle(.rollback, appID: appID, caller: caller, body: body, request: request, context: context)
        }

        group.get("config/body") { request, _ -> ConfigBodyResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            let (pattern, revision) = try Self.patternAndRevision(request, revisionField: "revision")
            guard let stored = try await configs.stored(appID: appID, pattern: pattern, revision: revision) else {
                throw revision.map { AdminErrors.revisionNotFound(pattern, $0) } ?? AdminErrors.patternNotFound(pattern)
            }
            try await configs.recordRead(appID: appID, pattern: pattern, revisions: [stored.revision], via: "body", caller: caller)
            return ConfigBodyResponse(
                pattern: pattern, revision: stored.revision, zeroKnowledge: stored.zeroKnowledge, tiers: stored.tiers, config: stored.config)
        }

        group.get("config/diff") { request, _ -> ConfigDiffResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            let (pattern, from) = try Self.patternAndRevision(request, revisionField: "from")
            let (_, to) = try Self.patternAndRevision(request, revisionField: "to")
            guard let from else { throw APIError.invalidField("from", "is required: the revision to compare from") }
            guard let before = try await configs.stored(appID: appID, pattern: pattern, revision: from) else {
                throw AdminErrors.revisionNotFound(pattern, from)
            }
            // Without `to`, against what is published now.
            guard let after = try await configs.stored(appID: appID, pattern: pattern, revision: to) else {
                throw to.map { AdminErrors.revisionNotFound(pattern, $0) } ?? AdminErrors.patternNotFound(pattern)
            }
            guard !before.zeroKnowledge, !after.zeroKnowledge else {
                throw APIError.invalidRequest("A zero-knowledge revision is ciphertext Sesame cannot read: decrypt both with 'sesame decrypt' and compare them there.")
            }
            try await configs.recordRead(appID: appID, pattern: pattern, revisions: [before.revision, after.revision], via: "diff", caller: caller)
            return ConfigDiffResponse(
                pattern: pattern, from: before.revision, to: after.revision, changes: before.config.changes(to: after.config),
                tiersChanged: before.tiers != after.tiers)
        }

        group.get("config/resolve") { request, _ -> ResolveResponse in
            let (appID, _) = try await authenticator.app(of: request)
            guard let version = request.uri.queryParameters.get("version") else {
                throw APIError.invalidField("version", "is required: the app version to resolve, such as 2.1.3")
            }
            guard let appVersion = AppVersion(version) else {
                throw APIError.invalidField("version", "must be an app version such as 2.1.3")
            }
            // What an app at the version gets right after it attests, decided as delivery decides;
            // `install` (a device's key id, as `sesame devices` lists it) places it in or out of a rollout.
            let install = try request.uri.queryParameters.get("install").map { try ConfigTargetingRoutes.validInstall(String($0)) }
            let environment = request.uri.queryParameters.get("environment").map { String($0) } ?? "production"
            guard ["production", "development"].contains(environment) else {
                throw APIError.invalidField("environment", "must be production (App Store and TestFlight builds) or development (Xcode builds, debug tokens)")
            }
            let now = Date()
            let release = try await configs.release(appID: appID)
            let token = AppRelease<PatternState>.Token(
                version: appVersion.text, issuedAt: now, install: install, development: environment == "development")
            switch release.resolve(version: appVersion, token: token, now: now) {
            case .serve(let state, let pattern, let refreshAfter, let decision):
                var answer = ResolveResponse(
                    requestedVersion: appVersion.text, outcome: "serve", matchedPattern: pattern, revision: state.revision,
                    zeroKnowledge: state.zeroKnowledge, refreshAfter: refreshAfter)
                switch decision {
                case .published: answer.decidedBy = "published"
                case .deviceOverride: answer.decidedBy = "deviceOverride"
                case .rollout(let id, let included, _):
                    answer.decidedBy = "rollout"
                    if let rollout = release.rollouts[pattern] {
                        answer.rollout = ResolvedRollout(
                            id: id, percent: RolloutBucket.percent(basisPoints: rollout.basisPoints),
                            paused: rollout.paused, included: install == nil ? nil : included)
                    }
                }
                return answer
            case .disabled(let reason):
                return ResolveResponse(requestedVersion: appVersion.text, outcome: "disabled", reason: reason)
            case .revoked:
                return ResolveResponse(requestedVersion: appVersion.text, outcome: "revoked")
            case .noConfig:
                throw AdminErrors.noMatch(appVersion.text)
            }
        }
    }

    /// `version` (a pattern) and the optional whole-number query field `revisionField`.
    static func patternAndRevision(_ request: Request, revisionField: String) throws -> (String, Int64?) {
        guard let version = request.uri.queryParameters.get("version") else {
            throw APIError.invalidField("version", "is required: the version pattern, such as 2.*")
        }
        let pattern = try validConfigPattern(String(version))
        guard let text = request.uri.queryParameters.get(revisionField) else { return (pattern, nil) }
        guard let revision = Int64(text), revision > 0 else { throw APIError.invalidField(revisionField, "must be a revision number") }
        return (pattern, revision)
    }

    /// The tiers an upload names, or nil when every key needs `attested` (naming `attested` adds
    /// nothing). A zero-knowledge config is one sealed envelope: it cannot be cut by tier.
    static func validTiers(_ tiers: ConfigTiers?, zeroKnowledge: Bool) throws -> ConfigTiers? {
        guard let tiers, !tiers.isAttestedOnly else { return nil }
        guard !zeroKnowledge else {
            throw APIError.invalidField("tiers", "cannot lower a zero-knowledge config: it is served to attested installs only")
        }
        guard tiers.required.count <= 1_000, tiers.required.keys.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 200 }) else {
            throw APIError.invalidField("tiers", "names at most 1000 top-level keys of the config, each 1 to 200 bytes")
        }
        return ConfigTiers(tiers.required.filter { $0.value != .attested })
    }

    /// An upload checked: its pattern, its document as stored, whether it is zero-knowledge, its tiers and rollout share.
    struct ValidUpload {
        let pattern: String
        let document: [UInt8]
        let zeroKnowledge: Bool
        let tiers: ConfigTiers?
        let rolloutBasisPoints: Int?
    }

    func validUpload(_ body: UploadRequest) throws -> ValidUpload {
        let pattern = try Self.validConfigPattern(body.version)
        guard body.config.objectValue != nil else { throw APIError.invalidField("config", "must be a JSON object") }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let document = Array(try encoder.encode(body.config))
        guard document.count <= maxConfigBytes else { throw AdminErrors.configTooLarge(limit: maxConfigBytes) }
        // A vault envelope is stored as the opaque ciphertext it is; Sesame cannot open it. Only a
        // document that says it is one is parsed as one.
        let zeroKnowledge: Bool
        do {
            zeroKnowledge = try body.config.objectValue?["sesameVault"] != nil && VaultEnvelope.decode(document) != nil
        } catch {
            throw APIError.invalidField("config", "looks like a zero-knowledge envelope but is not a valid one (\(error)); encrypt it again with 'sesame encrypt'")
        }
        let tiers = try Self.validTiers(body.tiers, zeroKnowledge: zeroKnowledge)
        let rolloutBasisPoints = try body.rollout.map { try ConfigTargetingRoutes.validRolloutShare($0, upload: true) }
        return ValidUpload(pattern: pattern, document: document, zeroKnowledge: zeroKnowledge, tiers: tiers, rolloutBasisPoints: rolloutBasisPoints)
    }

    func publish(appID: String, _ body: UploadRequest, caller: Caller) async throws -> UploadResponse {
        let upload = try validUpload(body)
        let (revision, rollout, patterns) = try await configs.upload(
            appID: appID, pattern: upload.pattern, body: upload.document, zeroKnowledge: upload.zeroKnowledge, tiers: upload.tiers,
            rolloutBasisPoints: upload.rolloutBasisPoints, validating: upload.zeroKnowledge ? nil : body.config, caller: caller)
        let reach = rollout.map { " to \(RolloutBucket.percentText(basisPoints: $0.basisPoints)) % of installs (staged rollout \($0.id.uuidString.lowercased()))" } ?? ""
        return UploadResponse(
            message: "Published revision \(revision) for version pattern '\(upload.pattern)'\(reach)\(upload.zeroKnowledge ? " (zero-knowledge: stored as ciphertext)" : "").",
            pattern: upload.pattern, revision: revision, totalPatterns: patterns.count, allPatterns: patterns, tiers: upload.tiers,
            rollout: rollout.map { RolloutInfo($0) })
    }

    func rollback(appID: String, _ body: RollbackRequest, caller: Caller) async throws -> RollbackResponse {
        let pattern = try Self.validConfigPattern(body.version)
        guard let revision = try await configs.rollback(appID: appID, pattern: pattern, to: body.revision, caller: caller) else {
            throw AdminErrors.revisionNotFound(pattern, body.revision)
        }
        return RollbackResponse(
            message: "Version pattern '\(pattern)' now serves the config of revision \(body.revision), as revision \(revision).",
            pattern: pattern, revision: revision, restoredFrom: body.revision)
    }

    /// A config's pattern in canonical form: a version pattern (`2.*`), or one qualified for
    /// development builds (`2.*@development`); 400 naming the rule it breaks.
    static func validConfigPattern(_ text: String) throws -> String {
        let suffix = AppRelease<PatternState>.developmentSuffix
        guard text.hasSuffix(suffix) else { return try validPattern(text) }
        return try validPattern(String(text.dropLast(suffix.count))) + suffix
    }

    /// `text` in canonical form (`2.*`), or 400 naming the rule it breaks.
    static func validPattern(_ text: String) throws -> String {
        do {
            return try VersionPattern(text).description
        } catch {
            throw AdminErrors.invalidPattern(error.description)
        }
    }
}
