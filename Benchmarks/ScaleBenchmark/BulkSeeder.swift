import Crypto
import Foundation
import Logging
import PostgresNIO
import SesameEncryption
import SesameStorage

/// Writes many apps' history straight into PostgreSQL: the rows `config/upload`, `kill` and
/// `revoke` write that delivery reads (apps, config revisions, kill switches, revocations), without
/// their audit and outbox rows, which delivery never reads. Each pattern's newest revision is a
/// real sealed 4 KiB config; older revisions are 4 KiB of sealed-looking bytes, which delivery
/// never opens (a real history would hold older sealed configs of the same size). With
/// `rollouts`, each app also has a staged rollout in flight on `2.*`: a newer sealed revision
/// served to 10 % of installs, the rest keeping the pattern's previous head (as `--rollout 10`).
struct BulkSeeder {
    static let patterns = ["*", "1.*", "2.*", "2.1.*", "3.0.0"]
    static let revisionsPerPattern = 20
    static let rolloutPattern = "2.*"
    static let rolloutBasisPoints = 1_000

    let client: PostgresClient
    let encryption: EnvelopeEncryption
    let logger: Logger
    let rollouts: Bool

    /// Seeds apps `BENCH<index>.com.example.app<index>` for `indexes`, 200 per round trip.
    func seed(_ indexes: Range<Int>) async throws {
        let history = ByteBuffer(bytes: (0..<4096).map { _ in UInt8.random(in: 0...255) })
        let historyDigest = ByteBuffer(bytes: SHA256.hash(data: Array(history.readableBytesView)))
        for batchStart in stride(from: indexes.lowerBound, to: indexes.upperBound, by: 200) {
            let batch = batchStart..<min(batchStart + 200, indexes.upperBound)
            let teams = batch.map { "BENCH\($0)" }
            let bundles = batch.map { "com.example.app\($0)" }
            let appIDs = zip(teams, bundles).map { "\($0).\($1)" }
            let storageIDs = appIDs.map { ByteBuffer(bytes: SHA256.hash(data: Array($0.utf8))) }
            var head = (apps: [String](), patterns: [String](), revisions: [Int64](), bodies: [ByteBuffer](), digests: [ByteBuffer]())
            for appID in appIDs {
                for (index, pattern) in Self.patterns.enumerated() {
                    let body = Self.config(appID: appID, pattern: pattern)
                    head.apps.append(appID)
                    head.patterns.append(pattern)
                    head.revisions.append(Int64((Self.revisionsPerPattern - 1) * Self.patterns.count + index + 1))
                    head.bodies.append(ByteBuffer(bytes: try encryption.seal(body, context: SealingContext.configBody(appID: appID, pattern: pattern))))
                    head.digests.append(ByteBuffer(bytes: SHA256.hash(data: body)))
                }
                if rollouts {
                    // The revision rolled out: newer than every seeded one, its previous the pattern's head.
                    let body = Self.config(appID: appID, pattern: Self.rolloutPattern + " rolling out")
                    head.apps.append(appID)
                    head.patterns.append(Self.rolloutPattern)
                    head.revisions.append(Int64(Self.revisionsPerPattern * Self.patterns.count + 1))
                    head.bodies.append(ByteBuffer(bytes: try encryption.seal(body, context: SealingContext.configBody(appID: appID, pattern: Self.rolloutPattern))))
                    head.digests.append(ByteBuffer(bytes: SHA256.hash(data: body)))
                }
            }
            let rolledOut = Int64(Self.revisionsPerPattern * Self.patterns.count + 1)
            let rolledBack = Int64((Self.revisionsPerPattern - 1) * Self.patterns.count + (Self.patterns.firstIndex(of: Self.rolloutPattern) ?? 0) + 1)
            let (patterns, generations, patternCount) = (Self.patterns, Int64(Self.revisionsPerPattern - 2), Int64(Self.patterns.count))
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query(
                    """
                    INSERT INTO apps (app_id, team_id, bundle_id, storage_id)
                    SELECT * FROM unnest(\(appIDs)::text[], \(teams)::text[], \(bundles)::text[], \(storageIDs)::bytea[])
                    """, logger: logger)
                try await connection.query(
                    """
                    INSERT INTO config_revisions (app_id, pattern, revision, action, body, size_bytes, body_sha256)
                    SELECT a.app_id, p.pattern, g * \(patternCount) + p.position, 'upload', \(history), 4096, \(historyDigest)
                    FROM unnest(\(appIDs)::text[]) AS a(app_id),
                        unnest(\(patterns)::text[]) WITH ORDINALITY AS p(pattern, position),
                        generate_series(0, \(generations)) AS g
                    """, logger: logger)
                try await connection.query(
                    """
                    INSERT INTO config_revisions (app_id, pattern, revision, action, body, size_bytes, body_sha256)
                    SELECT app_id, pattern, revision, 'upload', body, octet_length(body), digest
                    FROM unnest(\(head.apps)::text[], \(head.patterns)::text[], \(head.revisions)::bigint[], \(head.bodies)::bytea[],
                        \(head.digests)::bytea[]) AS h(app_id, pattern, revision, body, digest)
                    """, logger: logger)
                try await connection.query(
                    "INSERT INTO kill_switches (app_id, version, reason) SELECT unnest(\(appIDs)::text[]), '1.0.0', 'withdrawn'",
                    logger: logger)
                try await connection.query(
                    """
                    INSERT INTO revocations (app_id, version_pattern, issued_before)
                    SELECT unnest(\(appIDs)::text[]), '1.1.*', now() - interval '1 day'
                    """, logger: logger)
                guard rollouts else { return }
                try await connection.query(
                    """
                    INSERT INTO config_rollouts (rollout_id, app_id, pattern, revision, previous_revision, basis_points, salt, state)
                    SELECT gen_random_uuid(), app_id, \(Self.rolloutPattern), \(rolledOut), \(rolledBack), \(Self.rolloutBasisPoints),
                        md5(random()::text || app_id), 'active'
                    FROM unnest(\(appIDs)::text[]) AS a(app_id)
                    """, logger: logger)
            }
        }
    }

    /// A 4 KiB config of keys, endpoints, flags and copy, distinct per app and pattern.
    static func config(appID: String, pattern: String) -> [UInt8] {
        var object: [String: Any] = [
            "app": appID, "pattern": pattern,
            "api_keys": ["payments": "sk_live_" + String(repeating: "a", count: 96), "maps": String(repeating: "m", count: 64)],
            "endpoints": ["api": "https://api.example.com/v2", "cdn": "https://cdn.example.com"],
            "features": ["dark_mode": true, "new_checkout": false, "max_upload_mb": 50],
        ]
        var copy: [String: String] = [:]
        for index in 0..<30 { copy["line_\(index)"] = String(repeating: "Welcome to \(appID). ", count: 4).prefix(110).description }
        object["copy"] = copy
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return Array(data)
    }
}
