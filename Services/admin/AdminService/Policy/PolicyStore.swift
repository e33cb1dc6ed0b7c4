import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameHTTP
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

    /// Refuses a ban bit Sesame could not use for `appID`: one without the app's DeviceCheck key, or
    /// another than an app of the same team bans with (Apple keeps the bits per team).
    func checkBanBit(_ bit: Int?, appID: String) async throws {
        guard let bit else { return }
        guard bit == 0 || bit == 1 else { throw APIError.invalidField("deviceBanBit", "must be 0 or 1 (DeviceCheck keeps two bits), or null for no bans") }
        let credentials = try await database.client.query("SELECT 1 FROM apple_credentials WHERE app_id = \(appID)", logger: logger)
        var hasKey = false
        for try await _ in credentials { hasKey = true }
        guard hasKey else {
            throw APIError.invalidField("deviceBanBit", "needs the app's DeviceCheck key first (sesame apple set): Sesame sets and reads the bit with it")
        }
        let rows = try await database.client.query(
            """
            SELECT other.app_id, (other.policy->>'deviceBanBit')::int FROM apps other JOIN apps this ON this.team_id = other.team_id
            WHERE this.app_id = \(appID) AND other.app_id <> \(appID) AND other.policy->>'deviceBanBit' IS NOT NULL
            """, logger: logger)
        for try await (otherApp, otherBit) in rows.decode((String, Int).self) where otherBit != bit {
            throw APIError.invalidField(
                "deviceBanBit", "must be \(otherBit): Apple keeps the two bits per team, and \(otherApp), of the same team, bans with bit \(otherBit)")
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
        if before.deviceBanBit != after.deviceBanBit { changed.append("deviceBanBit") }
        if before.maxRiskMetric != after.maxRiskMetric { changed.append("maxRiskMetric") }
        if before.attestationRamp != after.attestationRamp { changed.append("attestationRamp") }
        if before.attestationRampAutomatic != after.attestationRampAutomatic { changed.append("attestationRampAutomatic") }
        return changed
    }
}
