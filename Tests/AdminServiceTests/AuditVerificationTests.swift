import Foundation
import HTTPTypes
import PostgresNIO
import SesameDomain
import SesameTestSupport
import Testing

@Suite("Admin: the tamper-evident audit log", .timeLimit(.minutes(3)))
struct AuditVerificationTests {
    /// What an attacker with the database's owner rights does: lift the append-only guard, change
    /// the log with `statement`, and put the guard back.
    static func tamper(_ harness: AdminHarness, _ statement: PostgresQuery) async throws {
        try await harness.database.query("ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only")
        try await harness.database.query("ALTER TABLE audit_chain_starts DISABLE TRIGGER audit_chain_starts_append_only")
        try await harness.database.query(statement)
        try await harness.database.query("ALTER TABLE audit_log ENABLE TRIGGER audit_log_append_only")
        try await harness.database.query("ALTER TABLE audit_chain_starts ENABLE TRIGGER audit_chain_starts_append_only")
    }

    static func verify(_ harness: AdminHarness, key: String, head: String? = nil) async throws -> AdminHarness.Reply {
        let reply = try await harness.call(.get, "/v1/admin/audit/verify" + (head.map { "?head=\($0)" } ?? ""), credential: key)
        #expect(reply.status == .ok, "\(reply.json)")
        return reply
    }

    /// The ids of the app's audit entries, oldest first.
    static func ids(_ harness: AdminHarness) async throws -> [Int64] {
        var ids: [Int64] = []
        for try await id in try await harness.database.query("SELECT id FROM audit_log ORDER BY id").decode(Int64.self) { ids.append(id) }
        return ids
    }

    @Test("changes through the API leave an intact chain whose head is the newest entry; reading a config body is audited")
    func intact() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            for round in 1...3 { _ = try await harness.upload(["round": round, "path": "a/b"], version: "*", key: key) }
            let body = try await harness.call(.get, "/v1/admin/config/body?version=*", credential: key)
            #expect(body.status == .ok)
            let audit = try await harness.call(.get, "/v1/admin/audit?limit=1&newest=true", credential: key)
            let newest = try #require((audit["entries"] as? [[String: Any]])?.first)
            #expect(newest["action"] as? String == "config.read" && newest["revision"] as? Int == 3)

            let verdict = try await Self.verify(harness, key: key)
            let ids = try await Self.ids(harness)
            #expect(verdict["intact"] as? Bool == true && verdict["entries"] as? Int == ids.count && verdict["predating"] as? Int == 0)
            let head = try #require(verdict["head"] as? [String: Any])
            #expect((head["id"] as? Int).map(Int64.init) == ids.last)
            #expect((head["hash"] as? String)?.count == 64)
        }
    }

    @Test("concurrent changes from many connections still form one chain")
    func concurrentAppends() async throws {
        try await AdminHarness.run(connections: .many) { harness in
            let key = try await harness.createKey()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<16 {
                    group.addTask {
                        let reply = try await harness.upload(["n": index], version: "\(index).*", key: key)
                        #expect(reply.status == .ok)
                    }
                }
                try await group.waitForAll()
            }
            let verdict = try await Self.verify(harness, key: key)
            let entries = try await Self.ids(harness).count
            #expect(verdict["intact"] as? Bool == true && verdict["entries"] as? Int == entries, "\(verdict.json)")
        }
    }

    @Test("an edited entry is named as the first broken one")
    func editedEntry() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            for round in 1...4 { _ = try await harness.upload(["round": round], version: "*", key: key) }
            let target = try await Self.ids(harness)[2]
            try await Self.tamper(harness, "UPDATE audit_log SET actor = 'operator' WHERE id = \(target)")
            let verdict = try await Self.verify(harness, key: key)
            let broken = try #require(verdict["broken"] as? [String: Any])
            #expect(verdict["intact"] as? Bool == false && (broken["id"] as? Int).map(Int64.init) == target)
            #expect((verdict["message"] as? String)?.contains("tampered with at entry \(target)") == true)
        }
    }

    @Test("a deleted entry breaks the chain at the entry after it")
    func deletedEntry() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            for round in 1...4 { _ = try await harness.upload(["round": round], version: "*", key: key) }
            let ids = try await Self.ids(harness)
            try await Self.tamper(harness, "DELETE FROM audit_log WHERE id = \(ids[1])")
            let verdict = try await Self.verify(harness, key: key)
            #expect(verdict["intact"] as? Bool == false)
            #expect(((verdict["broken"] as? [String: Any])?["id"] as? Int).map(Int64.init) == ids[2])
        }
    }

    @Test("cutting the newest entries is caught against a head exported before; a malformed head is refused")
    func exportedHead() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            for round in 1...3 { _ = try await harness.upload(["round": round], version: "*", key: key) }
            let exported = try #require((try await Self.verify(harness, key: key)["head"] as? [String: Any])?["hash"] as? String)
            _ = try await harness.upload(["round": 4], version: "*", key: key)
            let later = try await Self.verify(harness, key: key, head: exported)
            #expect(later["intact"] as? Bool == true && later["reachesHead"] as? Bool == true)

            // The attacker removes the newest entries: what is left is a consistent chain, but not the one exported.
            let ids = try await Self.ids(harness)
            try await Self.tamper(harness, "DELETE FROM audit_log WHERE id >= \(ids[ids.count - 2])")
            let cut = try await Self.verify(harness, key: key, head: exported)
            #expect(cut["intact"] as? Bool == false && cut["reachesHead"] as? Bool == false && cut["broken"] == nil)
            #expect((cut["message"] as? String)?.contains("no longer reaches the head") == true)

            let malformed = try await harness.call(.get, "/v1/admin/audit/verify?head=abc", credential: key)
            #expect(malformed.status == .badRequest && malformed.errorCode == "invalid_request" && malformed.errorMessage?.contains("head") == true)
        }
    }

    @Test("entries written before the chain existed are counted apart and do not break it")
    func predating() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            // A log from before the chain has no record of where it began.
            try await Self.tamper(harness, "DELETE FROM audit_log")
            try await Self.tamper(harness, "DELETE FROM audit_chain_starts")
            try await harness.database.query(
                "INSERT INTO audit_log (app_id, actor, action) VALUES (\(AdminHarness.appID), 'operator', 'app.create'), (\(AdminHarness.appID), 'key:ci', 'config.upload')")
            _ = try await harness.upload(["after": true], version: "*", key: key)
            let verdict = try await Self.verify(harness, key: key)
            #expect(verdict["intact"] as? Bool == true && verdict["predating"] as? Int == 2 && verdict["entries"] as? Int == 3, "\(verdict.json)")
        }
    }

    @Test("a log stripped of every hash and seal is broken where its chain began; without that record, at its first hashed entry")
    func strippedAndUnrecorded() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            for round in 1...3 { _ = try await harness.upload(["round": round], version: "*", key: key) }
            let exported = try #require((try await Self.verify(harness, key: key)["head"] as? [String: Any])?["hash"] as? String)
            let ids = try await Self.ids(harness)
            var first: Int64?
            for try await id in try await harness.database.query("SELECT first_id FROM audit_chain_starts").decode(Int64.self) { first = id }
            #expect(first == ids.first, "the chain's start is recorded with its first entry")

            try await Self.tamper(harness, "DELETE FROM audit_chain_starts")
            let unrecorded = try await Self.verify(harness, key: key)
            #expect(unrecorded["intact"] as? Bool == false)
            let unrecordedBreak = try #require(unrecorded["broken"] as? [String: Any])
            #expect((unrecordedBreak["id"] as? Int).map(Int64.init) == ids.first)
            #expect((unrecordedBreak["reason"] as? String)?.contains("no record of where") == true, "\(unrecordedBreak)")

            try await Self.tamper(harness, "INSERT INTO audit_chain_starts (app_id, first_id) VALUES (\(AdminHarness.appID), \(ids[0]))")
            try await Self.tamper(harness, "UPDATE audit_log SET previous_hash = NULL, entry_hash = NULL, entry_seal = NULL")
            let stripped = try await Self.verify(harness, key: key)
            #expect(stripped["intact"] as? Bool == false && stripped["predating"] as? Int == 0, "\(stripped.json)")
            #expect(((stripped["broken"] as? [String: Any])?["id"] as? Int).map(Int64.init) == ids.first)

            // What the record cannot stop (docs/admin.md): the record removed as well, the log reads
            // as one written before the chain; a head exported earlier still tells.
            try await Self.tamper(harness, "DELETE FROM audit_chain_starts")
            let unchained = try await Self.verify(harness, key: key, head: exported)
            #expect(unchained["predating"] as? Int == ids.count && unchained["reachesHead"] as? Bool == false && unchained["intact"] as? Bool == false)
        }
    }

    @Test("a database writer's appended entry that chains correctly is refused by its missing or wrong seal; every entry Sesame writes is sealed")
    func forgedAppend() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            for round in 1...2 { _ = try await harness.upload(["round": round], version: "*", key: key) }
            var unsealed = -1
            for try await count in try await harness.database.query("SELECT count(*) FROM audit_log WHERE entry_seal IS NULL").decode(Int.self) { unsealed = count }
            #expect(unsealed == 0)

            for forgedSeal in [nil, Data(repeating: 7, count: 32)] {
                var last: (Int64, Data)?
                for try await row in try await harness.database.query("SELECT id, entry_hash FROM audit_log ORDER BY id DESC LIMIT 1").decode((Int64, Data).self) {
                    last = row
                }
                let (lastID, lastHash) = try #require(last)
                // What an attacker with INSERT rights computes: the next link, chained to the head.
                let at = Int64(Date().timeIntervalSince1970 * 1_000_000)
                let link = AuditChain.Link(
                    appID: AdminHarness.appID, id: lastID + 1, atMicroseconds: at, actor: "operator", action: "key.create", pattern: nil, revision: nil,
                    details: [:])
                let hash = Data(try AuditChain.hash(of: link, following: Array(lastHash)))
                try await harness.database.query(
                    """
                    INSERT INTO audit_log (id, app_id, at, actor, action, pattern, revision, details, previous_hash, entry_hash, entry_seal, hash_version)
                    VALUES (\(lastID + 1), \(AdminHarness.appID), TIMESTAMPTZ 'epoch' + \(at) * INTERVAL '1 microsecond', 'operator', 'key.create',
                            NULL, NULL, '{}'::jsonb, \(lastHash), \(hash), \(forgedSeal), \(link.hashVersion.rawValue))
                    """)
                let verdict = try await Self.verify(harness, key: key)
                let broken = try #require(verdict["broken"] as? [String: Any], "\(verdict.json)")
                #expect(verdict["intact"] as? Bool == false && (broken["id"] as? Int).map(Int64.init) == lastID + 1)
                #expect((broken["reason"] as? String)?.contains("seal") == true, "\(broken)")
                try await Self.tamper(harness, "DELETE FROM audit_log WHERE id = \(lastID + 1)")
            }
        }
    }

    @Test("the chain checks out with an independent implementation (Python's rfc8785 and hashlib, docs/admin/verify_audit_chain.py), and a changed detail breaks it there too")
    func independentCheck() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            _ = try await harness.upload(["round": 1, "ratio": 0.1, "big": 1e21], version: "2.*", key: key)
            // Text JCS must escape and order exactly: quotes, a line separator, non-ASCII, an emoji.
            _ = try await harness.call(
                .post, "/v1/admin/kill-switch", credential: key,
                json: ["versions": ["2.1.3"], "enabled": false, "reason": "Crashes \"here\" \u{2028} café </script> 🚀"])
            let lines = try await harness.database.query(
                """
                SELECT json_build_object('app_id', app_id, 'id', id, 'at_us', (EXTRACT(EPOCH FROM at) * 1000000)::bigint, 'actor', actor,
                  'action', action, 'pattern', pattern, 'revision', revision, 'details', details,
                  'previous_hash', encode(previous_hash, 'hex'), 'entry_hash', encode(entry_hash, 'hex'), 'hash_version', hash_version)::text
                FROM audit_log WHERE app_id = \(AdminHarness.appID) ORDER BY id
                """
            ).decode(String.self).reduce(into: [String]()) { $0.append($1) }
            #expect(lines.count >= 3 && lines.allSatisfy { $0.contains(#""hash_version" : 2"#) || $0.contains(#""hash_version": 2"#) }, "\(lines)")
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/admin/verify_audit_chain.py").path
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("audit-\(UUID().uuidString).jsonl")
            defer { try? FileManager.default.removeItem(at: file) }

            try lines.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
            let intact = try await TestPython.runDetached(script, [file.path])
            #expect(intact.status == 0 && intact.output.hasPrefix("intact: \(lines.count) entries"), "\(intact.output)")

            // The kill switch's reason, one character changed, as a database writer would leave it.
            let tampered = lines.map { $0.replacingOccurrences(of: "café", with: "cafe") }
            #expect(tampered != lines)
            try tampered.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
            let broken = try await TestPython.runDetached(script, [file.path])
            #expect(broken.status == 1 && broken.output.contains("does not cover what it says"), "\(broken.output)")
        }
    }
}
