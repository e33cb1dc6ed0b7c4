import Foundation
import Logging
import PostgresNIO
import SesameConfiguration
import SesameDomain
import SesameJSON

/// A debug token as listings show it: never the token, only its id, name and standing.
public struct DebugTokenSummary: Codable, Sendable, Hashable {
    @LowercaseUUID public var tokenId: UUID
    public let name: String
    public let createdAt: Date
    public let expiresAt: Date
    public let revokedAt: Date?
    public let lastUsedAt: Date?
    public let uses: Int64
}

/// Debug tokens (`sesame_debug_` + 32 random bytes, base64url): a Simulator, a CI job or a
/// developer's device exchanges one at auth for `debug`-tier tokens. Admin creates, lists and
/// revokes them; auth redeems them. Only SHA-256 of a token is stored; every use is audited under
/// the token's name in the same transaction that counts it.
public struct DebugTokenStore: Sendable {
    public static let prefix = "sesame_debug_"
    /// The prefix and 43 base64url characters.
    public static let length = prefix.count + 43
    /// The longest a debug token lives.
    public static let maximumLifetime: Duration = .seconds(30 * 86_400)

    let database: Database
    let logger: Logger

    public init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// The `sub` of the access tokens a debug token is exchanged for: how delivery recognises
    /// them once the debug token is revoked.
    public static func tokenSubject(_ tokenID: UUID) -> String {
        "debug:" + tokenID.uuidString.lowercased()
    }

    /// Why a debug token was not exchanged.
    public enum Refusal: Error, Sendable, Equatable {
        /// Malformed, unknown, or another app's.
        case unknown
        case expired
        case revoked
    }

    /// What a redeemed token stands for.
    public struct Redeemed: Sendable, Equatable {
        public let tokenID: UUID
        public let name: String
    }

    /// A new token for `appID` named `name`, living `lifetime`; the plaintext is returned once.
    /// Nil when a live token already has that name. Made and audited as by `actor`.
    public func create(
        appID: String, name: String, lifetime: Duration, actor: String, createdByKey: UUID?
    ) async throws -> (token: String, summary: DebugTokenSummary)? {
        try await database.client.withTransaction(logger: logger) { connection in
            // An expired token keeps its name until it is retired here.
            try await connection.query(
                """
                UPDATE debug_tokens SET revoked_at = expires_at
                WHERE app_id = \(appID) AND name = \(name) AND revoked_at IS NULL AND expires_at <= now()
                """, logger: logger)
            let token = BearerSecret.generate(prefix: Self.prefix)
            let tokenID = UUID()
            let rows = try await connection.query(
                """
                INSERT INTO debug_tokens (token_id, app_id, name, token_hash, created_by_key, created_by, expires_at)
                VALUES (\(tokenID), \(appID), \(name), \(BearerSecret.hash(token)), \(createdByKey), \(actor),
                        now() + make_interval(secs => \(lifetime.wholeSeconds)))
                ON CONFLICT (app_id, name) WHERE revoked_at IS NULL DO NOTHING
                RETURNING created_at, expires_at
                """, logger: logger)
            for try await (createdAt, expiresAt) in rows.decode((Date, Date).self) {
                try await AuditLog.append(
                    AuditEntry(
                        actor: actor, action: .debugTokenCreate,
                        details: [
                            "tokenId": .string(tokenID.uuidString.lowercased()), "name": .string(name),
                            "expiresAt": .string(expiresAt.formatted(.iso8601)),
                        ]), appID: appID, on: connection, logger: logger)
                return (
                    token,
                    DebugTokenSummary(
                        tokenId: tokenID, name: name, createdAt: createdAt, expiresAt: expiresAt, revokedAt: nil, lastUsedAt: nil, uses: 0)
                )
            }
            return nil
        }
    }

    /// Every token of `appID`, newest first.
    public func list(appID: String) async throws -> [DebugTokenSummary] {
        let rows = try await database.client.query(
            """
            SELECT token_id, name, created_at, expires_at, revoked_at, last_used_at, uses FROM debug_tokens
            WHERE app_id = \(appID) ORDER BY created_at DESC, name
            """, logger: logger)
        return try await Self.summaries(rows)
    }

    /// The summaries of rows of `token_id, name, created_at, expires_at, revoked_at, last_used_at, uses`.
    private static func summaries(_ rows: PostgresRowSequence) async throws -> [DebugTokenSummary] {
        var tokens: [DebugTokenSummary] = []
        for try await (id, name, createdAt, expiresAt, revokedAt, lastUsedAt, uses) in rows.decode(
            (UUID, String, Date, Date, Date?, Date?, Int64).self)
        {
            tokens.append(
                DebugTokenSummary(
                    tokenId: id, name: name, createdAt: createdAt, expiresAt: expiresAt, revokedAt: revokedAt, lastUsedAt: lastUsedAt, uses: uses))
        }
        return tokens
    }

    /// Revokes the live token of `appID` named `nameOrID` (a name, or a token id); nil when there
    /// is none. Audited as `actor`; the revocation notes the app as changed (migration 11), which
    /// tells delivery to stop the access tokens it earned.
    public func revoke(appID: String, nameOrID: String, actor: String) async throws -> DebugTokenSummary? {
        let id = UUID(uuidString: nameOrID)
        return try await database.client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                UPDATE debug_tokens SET revoked_at = now()
                WHERE app_id = \(appID) AND revoked_at IS NULL AND (name = \(nameOrID) OR token_id = \(id))
                RETURNING token_id, name, created_at, expires_at, revoked_at, last_used_at, uses
                """, logger: logger)
            guard let revoked = try await Self.summaries(rows).first else { return nil }
            try await AuditLog.append(
                AuditEntry(
                    actor: actor, action: .debugTokenRevoke,
                    details: ["tokenId": .string(revoked.tokenId.uuidString.lowercased()), "name": .string(revoked.name)]),
                appID: appID, on: connection, logger: logger)
            return revoked
        }
    }

    /// Redeems `token` for `appID`: counts the use and audits it under the token's name, with
    /// `details` (the app version), in one transaction.
    /// - Throws: `Refusal` when the token is not a live token of `appID`.
    public func redeem(_ token: String, appID: String, details: [String: JSONValue]) async throws -> Redeemed {
        guard token.utf8.count == Self.length, token.hasPrefix(Self.prefix) else { throw Refusal.unknown }
        let hash = BearerSecret.hash(token)
        // A refusal is returned from the transaction, not thrown: the transaction wraps what it throws.
        let outcome: Result<Redeemed, Refusal> = try await database.client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                SELECT token_id, name, token_hash, revoked_at IS NOT NULL, expires_at <= now() FROM debug_tokens
                WHERE token_hash = \(hash) AND app_id = \(appID) FOR UPDATE
                """, logger: logger)
            var found: (id: UUID, name: String, revoked: Bool, expired: Bool)?
            for try await (id, name, stored, revoked, expired) in rows.decode((UUID, String, Data, Bool, Bool).self) {
                // The index found it by hash; compare once more without an early exit.
                if ConstantTime.equals(stored, hash) { found = (id, name, revoked, expired) }
            }
            guard let found else { return .failure(.unknown) }
            if found.revoked { return .failure(.revoked) }
            if found.expired { return .failure(.expired) }
            try await connection.query(
                "UPDATE debug_tokens SET uses = uses + 1, last_used_at = now() WHERE token_id = \(found.id)", logger: logger)
            var details = details
            details["tokenId"] = .string(found.id.uuidString.lowercased())
            try await AuditLog.append(
                AuditEntry(actor: "debug token '\(found.name)'", action: .debugTokenUse, details: details), appID: appID, on: connection,
                logger: logger)
            return .success(Redeemed(tokenID: found.id, name: found.name))
        }
        return try outcome.get()
    }
}
