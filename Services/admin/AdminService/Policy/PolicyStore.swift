import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameJSON
import SesameStorage

/// An app's policy: read, and replaced with audit and an event in one transaction.
struct PolicyStore: Sendable {
    let database: Database
    let logger: Logger

    func policy(appID: String) async throws -> AppPolicy {
        let rows = try await database.client.query("SELECT policy::text FROM apps WHERE app_id = \(appID)", logger: logger)
        for try await text in rows.decode(String.self) { return try AppPolicy(storedJSON: text) }
        throw AdminErrors.appNotFound
    }

    /// Replaces the policy; returns the names of the fields that changed. The old policy is read
    /// under a row lock in the same transaction, so concurrent replacements each report exactly
    /// what they changed.
    func replace(appID: String, with policy: AppPolicy, caller: Caller) async throws -> [String] {
        let json = try policy.storedJSON()
        return try await database.client.withTransaction(logger: logger) { connection in
            var before: AppPolicy?
            let rows = try await connection.query("SELECT policy::text FROM apps WHERE app_id = \(appID) FOR UPDATE", logger: logger)
            for try await text in rows.decode(String.self) { before = try AppPolicy(storedJSON: text) }
            guard let before else { throw AdminErrors.appNotFound }
            let changed = Self.changedFields(before, policy)
            try await connection.query("UPDATE apps SET policy = \(json)::jsonb WHERE app_id = \(appID)", logger: logger)
            try await AuditLog.append(
                AuditEntry(actor: caller.auditName, action: .policySet, details: ["changed": .array(changed.map { .string($0) })]),
                appID: appID, on: connection, logger: logger)
            return changed
        }
    }

    static func changedFields(_ before: AppPolicy, _ after: AppPolicy) -> [String] {
        var changed: [String] = []
        if before.allowDevelopmentKeys != after.allowDevelopmentKeys { changed.append("allowDevelopmentKeys") }
        if before.refreshRequiresAssertion != after.refreshRequiresAssertion { changed.append("refreshRequiresAssertion") }
        if before.userIdentity != after.userIdentity { changed.append("userIdentity") }
        if before.identityIssuer != after.identityIssuer { changed.append("identityIssuer") }
        if before.userDocumentQuota != after.userDocumentQuota { changed.append("userDocumentQuota") }
        if before.allowDebugTokensInProduction != after.allowDebugTokensInProduction { changed.append("allowDebugTokensInProduction") }
        if before.admitUnattested != after.admitUnattested { changed.append("admitUnattested") }
        if before.requireApproval != after.requireApproval { changed.append("requireApproval") }
        if before.blobTier != after.blobTier { changed.append("blobTier") }
        if before.userDataTier != after.userDataTier { changed.append("userDataTier") }
        if before.apiAudiences != after.apiAudiences { changed.append("apiAudiences") }
        return changed
    }
}
