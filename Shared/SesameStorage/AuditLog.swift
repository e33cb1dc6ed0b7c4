import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameJSON

/// One line of the append-only audit log (the database refuses updates and deletes).
public struct AuditEntry: Codable, Hashable, Sendable {
    public var id: Int64 = 0
    public var at: Date = Date()
    /// Who: a provisioning key's audit name, the operator, or a debug token's name.
    public var actor: String
    /// What, as `noun.verb` (`AuditAction`'s raw value): `config.upload`, `debug_token.use`, …; an
    /// entry read back keeps what was written, also an action this version no longer makes.
    public private(set) var action: String
    public var pattern: String?
    public var revision: Int64?
    public var details: [String: JSONValue] = [:]

    /// An entry to record: `action` is one of the declared actions.
    public init(
        id: Int64 = 0, at: Date = Date(), actor: String, action: AuditAction, pattern: String? = nil, revision: Int64? = nil,
        details: [String: JSONValue] = [:]
    ) {
        self.init(id: id, at: at, actor: actor, recordedAction: action.rawValue, pattern: pattern, revision: revision, details: details)
    }

    /// An entry as read back from the log.
    init(
        id: Int64, at: Date, actor: String, recordedAction action: String, pattern: String?, revision: Int64?, details: [String: JSONValue]
    ) {
        self.id = id
        self.at = at
        self.actor = actor
        self.action = action
        self.pattern = pattern
        self.revision = revision
        self.details = details
    }
}

/// Writes and reads the audit log; writes happen in the action's own transaction, so an action is
/// never done without its entry. Admin records every change, auth every debug-token use.
public struct AuditLog: Sendable {
    let database: Database
    let logger: Logger

    public init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// Appends `entry` for `appID` on `connection` (inside the caller's transaction), as the next
    /// link of the app's chain (`AuditChain`). One transaction at a time extends an app's chain:
    /// the lock is held until the caller commits, so ids and links follow the same order.
    public static func append(_ entry: AuditEntry, appID: String, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("SELECT pg_advisory_xact_lock(\(chainLockSpace), hashtext(\(appID)))", logger: logger)
        let rows = try await connection.query(
            """
            SELECT nextval(pg_get_serial_sequence('audit_log', 'id')), (EXTRACT(EPOCH FROM now()) * 1000000)::bigint,
                   (SELECT entry_hash FROM audit_log WHERE app_id = \(appID) ORDER BY id DESC LIMIT 1)
            """, logger: logger)
        var next: (id: Int64, at: Int64, previous: [UInt8])?
        var startsTheChain = false
        for try await (id, at, previous) in rows.decode((Int64, Int64, ByteBuffer?).self) {
            next = (id, at, previous.map { Array($0.readableBytesView) } ?? AuditChain.genesis)
            startsTheChain = previous == nil
        }
        guard let next else { throw StorageError.missingRow("the audit log's next id") }
        if startsTheChain {
            // Kept if one exists: an app whose hashes were stripped does not start over.
            try await connection.query(
                "INSERT INTO audit_chain_starts (app_id, first_id) VALUES (\(appID), \(next.id)) ON CONFLICT (app_id) DO NOTHING", logger: logger)
        }
        let link = AuditChain.Link(
            appID: appID, id: next.id, atMicroseconds: next.at, actor: entry.actor, action: entry.action, pattern: entry.pattern,
            revision: entry.revision, details: entry.details, hashVersion: .current)
        let hashBytes = try AuditChain.hash(of: link, following: next.previous)
        let hash = ByteBuffer(bytes: hashBytes)
        let seal = AuditSeal.bound.map { ByteBuffer(bytes: $0.seal(hashBytes)) }
        let details = String(decoding: try AuditChain.jcsDetails(entry.details), as: UTF8.self)
        try await connection.query(
            """
            INSERT INTO audit_log (id, app_id, at, actor, action, pattern, revision, details, previous_hash, entry_hash, entry_seal, hash_version)
            VALUES (\(next.id), \(appID), TIMESTAMPTZ 'epoch' + \(next.at) * INTERVAL '1 microsecond', \(entry.actor), \(entry.action),
                    \(entry.pattern), \(entry.revision), \(details)::jsonb, \(ByteBuffer(bytes: next.previous)), \(hash), \(seal),
                    \(link.hashVersion.rawValue))
            """, logger: logger)
    }

    /// The advisory-lock space of audit chains (the first key of `pg_advisory_xact_lock`).
    static let chainLockSpace: Int32 = 0x4155_4454  // "AUDT"

    /// Walks `appID`'s whole log in id order and checks its chain from where it began (its record in
    /// `audit_chain_starts`), a page at a time, and each
    /// entry's seal with `seal` (the bound one by default): once an entry is sealed, every later one
    /// must be, by the master key. With `expectedHead` (a head exported earlier), also whether the
    /// chain still reaches it.
    public func verify(appID: String, expectedHead: [UInt8]? = nil, seal: AuditSeal? = AuditSeal.bound) async throws -> AuditChain.Verifier {
        let starts = try await database.client.query("SELECT first_id FROM audit_chain_starts WHERE app_id = \(appID)", logger: logger)
        var start = AuditChain.ChainStart.notRecorded
        for try await firstID in starts.decode(Int64.self) { start = .entry(firstID) }
        var verifier = AuditChain.Verifier(expectedHead: expectedHead, chainStart: start)
        var after: Int64 = 0
        while verifier.broken == nil {
            let rows = try await database.client.query(
                """
                SELECT id, (EXTRACT(EPOCH FROM at) * 1000000)::bigint, actor, action, pattern, revision, details::text, previous_hash, entry_hash,
                    entry_seal, hash_version
                FROM audit_log WHERE app_id = \(appID) AND id > \(after) ORDER BY id LIMIT 1000
                """, logger: logger)
            var read = 0
            for try await (id, at, actor, action, pattern, revision, details, previous, hash, entrySeal, version) in rows.decode(
                (Int64, Int64, String, String, String?, Int64?, String, ByteBuffer?, ByteBuffer?, ByteBuffer?, Int16).self)
            {
                read += 1
                after = id
                // A version this code does not know is checked as version 1, and so breaks the chain.
                let link = AuditChain.Link(
                    appID: appID, id: id, atMicroseconds: at, actor: actor, action: action, pattern: pattern, revision: revision,
                    details: (try? JSONDecoder().decode([String: JSONValue].self, from: Data(details.utf8))) ?? [:],
                    hashVersion: AuditChain.HashVersion(rawValue: version) ?? .v1)
                let entryHash = hash.map { Array($0.readableBytesView) }
                verifier.check(link, previousHash: previous.map { Array($0.readableBytesView) }, entryHash: entryHash)
                if let seal, let entryHash {
                    verifier.checkSeal(id: id, sealed: entrySeal != nil, valid: entrySeal.map { seal.verifies(Array($0.readableBytesView), of: entryHash) } ?? false)
                }
            }
            if read < 1000 { break }
        }
        return verifier
    }

    /// Entries of `appID` after `afterID`, oldest first, at most `limit`.
    public func entries(appID: String, after afterID: Int64, limit: Int) async throws -> [AuditEntry] {
        try await chainedEntries(appID: appID, after: afterID, limit: limit).map(\.entry)
    }

    /// As `entries`, each with its hash in the app's chain (nil for an entry older than the chain).
    public func chainedEntries(appID: String, after afterID: Int64, limit: Int) async throws -> [(entry: AuditEntry, hash: [UInt8]?)] {
        try await read(
            """
            SELECT id, at, actor, action, pattern, revision, details::text, entry_hash FROM audit_log
            WHERE app_id = \(appID) AND id > \(afterID) ORDER BY id LIMIT \(limit)
            """)
    }

    /// The newest `limit` entries of `appID`, oldest first.
    public func newest(appID: String, limit: Int) async throws -> [AuditEntry] {
        try await read(
            """
            SELECT * FROM (
                SELECT id, at, actor, action, pattern, revision, details::text, entry_hash FROM audit_log
                WHERE app_id = \(appID) ORDER BY id DESC LIMIT \(limit)
            ) AS newest ORDER BY id
            """).map(\.entry)
    }

    private func read(_ query: PostgresQuery) async throws -> [(entry: AuditEntry, hash: [UInt8]?)] {
        let rows = try await database.client.query(query, logger: logger)
        var entries: [(entry: AuditEntry, hash: [UInt8]?)] = []
        for try await (id, at, actor, action, pattern, revision, details, hash) in rows.decode(
            (Int64, Date, String, String, String?, Int64?, String, ByteBuffer?).self)
        {
            let entry = AuditEntry(
                id: id, at: at, actor: actor, recordedAction: action, pattern: pattern, revision: revision,
                details: (try? JSONDecoder().decode([String: JSONValue].self, from: Data(details.utf8))) ?? [:])
            entries.append((entry, hash.map { Array($0.readableBytesView) }))
        }
        return entries
    }
}
