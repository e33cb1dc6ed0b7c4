import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameHTTP
import SesameStorage

/// What auth checks, after a token or an assertion verified, before it answers for an install:
/// the same gate delivery applies at every request. The install's key is not revoked, and no kill
/// switch or emergency revocation made since covers it. A token is judged by what it says (its
/// version, when it was issued); an assertion, which carries neither, by its key (the last version
/// it refreshed at, when it was attested). Read from PostgreSQL at each call, so a revocation holds
/// at once for API tokens, single-use consumes and assertions alike.
struct InstallGate: Sendable {
    let database: Database
    let logger: Logger

    /// What the gate is asked about.
    enum Subject: Sendable {
        /// A token of the install's key: the version it names and when it was issued.
        case token(version: String?, issuedAt: Date)
        /// An assertion of the key itself.
        case key
    }

    /// Why the gate refused.
    enum Refusal: Error, Equatable {
        /// No such key of the app.
        case unknownKey
        /// The key was revoked (a revoked device).
        case revokedKey
        /// An emergency revocation covers the subject (or the app's rules cannot be read whole).
        case revoked
        /// A kill switch covers the version.
        case disabled(reason: String)
    }

    /// Passes, or throws a `Refusal`. The key and the rules are read concurrently: one round trip
    /// of latency.
    func check(appID: String, keyID: [UInt8], subject: Subject, now: Date = Date()) async throws {
        async let storedKey = key(keyID, appID: appID)
        async let loaded = StoredAccessRules.load(appID: appID, from: database.client, logger: logger)
        guard let key = try await storedKey else { throw Refusal.unknownKey }
        if key.revoked { throw Refusal.revokedKey }
        let rules = try await loaded
        // A rule that does not parse could be the one that covers this install: refuse.
        guard rules.failures[appID] == nil else { throw Refusal.revoked }
        // A token is no older than its key: an install attested after an emergency revocation is
        // not covered by it, though its API tokens' whole-second `iat` may read a moment earlier.
        let (version, issuedAt): (String?, Date) =
            switch subject {
            case .token(let version, let issuedAt): (version, max(issuedAt, key.attestedAt))
            case .key: (key.appVersion, key.attestedAt)
            }
        switch (rules.rules[appID] ?? AccessRules()).verdict(requestedVersion: nil, tokenVersionText: version, issuedAt: issuedAt, now: now) {
        case .allowed: return
        case .revoked: throw Refusal.revoked
        case .disabled(let reason): throw Refusal.disabled(reason: reason)
        }
    }

    private struct StoredKey {
        let revoked: Bool
        let appVersion: String?
        let attestedAt: Date
    }

    private func key(_ keyID: [UInt8], appID: String) async throws -> StoredKey? {
        let rows = try await database.client.query(
            "SELECT revoked_at IS NOT NULL, app_version, created_at FROM attested_keys WHERE key_id = \(Data(keyID)) AND app_id = \(appID)",
            logger: logger)
        for try await (revoked, appVersion, attestedAt) in rows.decode((Bool, String?, Date).self) {
            return StoredKey(revoked: revoked, appVersion: appVersion, attestedAt: attestedAt)
        }
        return nil
    }
}
