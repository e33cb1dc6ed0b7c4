import AppAttestTesting
import Crypto
import Foundation
import HTTPTypes
import Logging
import PostgresNIO
import SesameDomain
import SesameStorage
import SesameTestSupport
import Testing

@testable import AuthService

/// The common refresh in one statement: it rotates only when everything the refresh checks one by
/// one still holds in its snapshot, and otherwise writes nothing and hands back the state. An
/// asserted refresh advances the key's counter and rotates in one statement.
@Suite("Refresh in fewer statements", .timeLimit(.minutes(2)))
struct OneStatementRefreshTests {
    @Test("the statement rotates only a live family of the named app and key, with its key live, no revocation and the policy assumed")
    func guardedRotation() async throws {
        try await AuthHarness.run { harness in
            let (key, attested) = try await harness.attestNewKey()
            #expect(attested.status == .ok)
            let family = try await Self.single(harness.database, "SELECT family_id FROM refresh_token_families", as: UUID.self)
            let policyText = try await Self.single(harness.database, "SELECT policy::text FROM apps", as: String.self)
            let current = PolicySightings.Sighting(text: policyText, policy: try AppPolicy(storedJSON: policyText))
            let appID = AuthHarness.appID
            let keyID = key.keyId

            try await harness.withDatabase { pool in
                let families = RefreshTokenFamilies(database: pool, policies: StoredPolicies(), logger: Logger(label: "test"))
                // What the refresh of the attested family would send, but for what a call changes.
                func rotate(
                    from generation: Int64 = 0, appID otherApp: String? = nil, keyID otherKey: [UInt8]? = nil,
                    assumed otherPolicy: PolicySightings.Sighting? = nil, family otherFamily: UUID? = nil
                ) async throws -> GuardedRotation {
                    try await families.rotateIfUnchanged(
                        otherFamily ?? family, from: generation, appID: otherApp ?? appID, keyID: otherKey ?? keyID,
                        assumed: otherPolicy ?? current, lifetime: .seconds(3600), appVersion: "4.0.0")
                }
                func declinedState(_ rotation: GuardedRotation) -> RefreshFamilyState? {
                    if case .declined(let state) = rotation { return state }
                    Issue.record("rotated where it should have declined")
                    return nil
                }

                // Each assumption that no longer holds: nothing written, the state handed back.
                let stale = PolicySightings.Sighting(text: #"{"refreshRequiresAssertion": true}"#, policy: AppPolicy())
                #expect(declinedState(try await rotate(assumed: stale))?.generation == 0)
                #expect(declinedState(try await rotate(appID: "OTHERTEAM1.com.example.other"))?.appID == appID)
                #expect(declinedState(try await rotate(keyID: Array(repeating: 1, count: 32)))?.keyID == keyID)
                #expect(declinedState(try await rotate(from: 1))?.generation == 0)
                #expect(try await Self.generation(harness.database) == 0)
                // An unknown family: nothing to hand back.
                if case .declined(let state) = try await rotate(family: UUID()) { #expect(state == nil) } else { Issue.record("rotated") }

                // Everything holds: the family moves on and the device's use is recorded.
                guard case .rotated(let next) = try await rotate() else { Issue.record("declined a current refresh"); return }
                #expect(next == 1)
                #expect(try await Self.generation(harness.database) == 1)
                #expect(try await Self.single(harness.database, "SELECT app_version FROM attested_keys", as: String.self) == "4.0.0")
                // The same generation again is not rotated twice (the reuse is the checks' to judge).
                #expect(declinedState(try await rotate(from: 0))?.generation == 1)

                // An emergency revocation of the app, whatever it covers, leaves it to the checks.
                try await harness.database.query(
                    "INSERT INTO revocations (app_id, version_pattern, issued_before) VALUES (\(appID), '9.*', now())")
                #expect(declinedState(try await rotate(from: 1))?.revocations.rules[appID] != nil)
                try await harness.database.query("DELETE FROM revocations")
                // A revoked key.
                try await harness.database.query("UPDATE attested_keys SET revoked_at = now()")
                #expect(declinedState(try await rotate(from: 1))?.keyRevoked == true)
                try await harness.database.query("UPDATE attested_keys SET revoked_at = NULL")
                // A revoked family.
                try await harness.database.query("UPDATE refresh_token_families SET revoked_at = now()")
                #expect(declinedState(try await rotate(from: 1))?.revoked == true)
                #expect(try await Self.generation(harness.database) == 1)
            }
        }
    }

    @Test("what changed after the app's policy was last read is refused as if read afresh: assertion, development keys, revocation")
    func staleSightings() async throws {
        try await AuthHarness.run { harness in
            // Two refreshes, so auth has read the app's policy and the next ones go in one statement.
            let (key, first) = try await harness.attestNewKey(appVersion: "3.0.0")
            let second = try await harness.refresh(try #require(first["refreshToken"]))
            let third = try await harness.refresh(try #require(second["refreshToken"]))
            #expect(third.status == .ok)
            let (_, other) = try await harness.attestNewKey(appVersion: "2.1.3")

            try await harness.setPolicy(AppPolicy(refreshRequiresAssertion: true))
            #expect(try await harness.refresh(try #require(third["refreshToken"])).errorCode == "assertion_required")
            let asserted = try await harness.refresh(
                try #require(third["refreshToken"]), extra: try await harness.assertionFields(key, counter: 1))
            #expect(asserted.status == .ok)

            try await harness.setPolicy(AppPolicy(allowDevelopmentKeys: false, refreshRequiresAssertion: false))
            #expect(try await harness.refresh(try #require(asserted["refreshToken"])).errorCode == "environment_not_allowed")

            try await harness.setPolicy(AppPolicy(refreshRequiresAssertion: false))
            let fourth = try await harness.refresh(try #require(asserted["refreshToken"]))
            #expect(fourth.status == .ok)
            try await harness.database.query(
                "INSERT INTO revocations (app_id, version_pattern, issued_before) VALUES (\(AuthHarness.appID), '2.*', now())")
            #expect(try await harness.refresh(try #require(other["refreshToken"])).errorCode == "token_revoked")
            // The revocation covers version 2 only: the family at 3.0.0 still refreshes, and its
            // superseded token is still caught as a reuse.
            #expect(try await harness.refresh(try #require(fourth["refreshToken"])).status == .ok)
            #expect(try await harness.refresh(try #require(fourth["refreshToken"])).errorCode == "refresh_token_reused")
        }
    }

    @Test("two asserted refreshes racing with one counter: the counter and the rotation move together, once; the other writes nothing")
    func assertedRace() async throws {
        try await AuthHarness.run(policy: AppPolicy(), connections: .many) { harness in
            let (key, attested) = try await harness.attestNewKey()
            let token = try #require(attested["refreshToken"])
            // Two assertions with one counter (each over its own challenge): both read the key at
            // counter 0 and pass the check, then wait at the key's row until both are there, so the
            // statement that advances the counter decides.
            let replies = try await withThrowingTaskGroup(of: AuthHarness.Reply.self) { group in
                try await harness.database.withTransaction(logger: Logger(label: "test")) { connection in
                    try await connection.query("SELECT 1 FROM attested_keys FOR UPDATE", logger: Logger(label: "test"))
                    for _ in 0..<2 {
                        group.addTask { try await harness.refresh(token, extra: try await harness.assertionFields(key, counter: 7)) }
                    }
                    try await Task.sleep(for: .seconds(2))
                }
                return try await group.reduce(into: [AuthHarness.Reply]()) { $0.append($1) }
            }
            #expect(replies.filter { $0.status == .ok }.count == 1)
            #expect(replies.filter { $0.errorCode == "assertion_invalid" }.count == 1, "\(replies.map(\.errorCode))")
            // One rotation, the family live, the counter at 7.
            #expect(try await Self.generation(harness.database) == 1)
            #expect(try await Self.single(harness.database, "SELECT revoked_at IS NULL FROM refresh_token_families", as: Bool.self))
            #expect(try await Self.single(harness.database, "SELECT counter FROM attested_keys", as: Int64.self) == 7)
        }
    }

    @Test("an asserted refresh over a spent or expired challenge is refused as invalid_challenge and writes nothing else")
    func assertedChallengeRedeemedInTheStatement() async throws {
        try await AuthHarness.run(policy: AppPolicy()) { harness in
            let (key, attested) = try await harness.attestNewKey()
            let first = try await harness.assertionFields(key, counter: 3)
            let refreshed = try await harness.refresh(try #require(attested["refreshToken"]), extra: first)
            #expect(refreshed.status == .ok)
            let token = try #require(refreshed["refreshToken"])

            // A valid assertion with a higher counter, over the client data whose challenge is spent.
            let spentText = try #require(first["clientData"] as? String)
            let spentClientData = try #require(Data(base64Encoded: spentText))
            let overSpent = try harness.attester.assert(
                key, clientDataHash: Array(SHA256.hash(data: spentClientData)), appId: AuthHarness.appID, counter: 4)
            let spent = try await harness.refresh(
                token, extra: ["assertion": Data(overSpent).base64EncodedString(), "clientData": spentClientData.base64EncodedString()])
            #expect(spent.errorCode == "invalid_challenge")

            // An expired challenge.
            let nonce = (0..<32).map { _ in UInt8.random(in: 0...255) }
            try await harness.database.query(
                """
                INSERT INTO challenges (nonce_hash, purpose, expires_at)
                VALUES (\(Data(SHA256.hash(data: nonce))), 'app', now() - interval '1 second')
                """)
            let expiredClientData = try JSONSerialization.data(withJSONObject: ["challenge": Data(nonce).base64EncodedString()])
            let overExpired = try harness.attester.assert(
                key, clientDataHash: Array(SHA256.hash(data: expiredClientData)), appId: AuthHarness.appID, counter: 5)
            let expired = try await harness.refresh(
                token, extra: ["assertion": Data(overExpired).base64EncodedString(), "clientData": expiredClientData.base64EncodedString()])
            #expect(expired.errorCode == "invalid_challenge")
            #expect(try await Self.single(harness.database, "SELECT count(*) FROM challenges WHERE expires_at < now()", as: Int64.self) == 0)

            // Neither moved the counter or the family: the token still refreshes, at counter 4.
            #expect(try await Self.single(harness.database, "SELECT counter FROM attested_keys", as: Int64.self) == 3)
            #expect(try await Self.generation(harness.database) == 1)
            #expect(try await harness.refresh(token, extra: try await harness.assertionFields(key, counter: 4)).status == .ok)
        }
    }

    static func generation(_ database: PostgresClient) async throws -> Int64 {
        try await single(database, "SELECT generation FROM refresh_token_families", as: Int64.self)
    }

    static func single<Value: PostgresDecodable & Sendable>(_ database: PostgresClient, _ sql: String, as _: Value.Type) async throws -> Value {
        for try await value in try await database.query(PostgresQuery(unsafeSQL: sql)).decode(Value.self) { return value }
        throw PostgresSingleRowMissing(sql: sql)
    }

    struct PostgresSingleRowMissing: Error { let sql: String }
}
