import Foundation
import HTTPTypes
import PostgresNIO
import SesameDomain
import SesameTestSupport
import Testing

@Suite("Admin: two-person approval", .timeLimit(.minutes(3)))
struct ApprovalTests {
    /// The app with two provisioning keys (two people) and a policy guarding `guarded`.
    static func guardedApp(_ harness: AdminHarness, _ guarded: [String]) async throws -> (first: String, second: String) {
        let first = try await harness.createKey(name: "ana")
        let second = try await harness.createKey(name: "ben")
        let policy = try await harness.call(.put, "/v1/admin/policy", credential: first, json: ["requireApproval": guarded])
        #expect(policy.status == .ok, "\(policy.json)")
        return (first, second)
    }

    static func proposalID(_ reply: AdminHarness.Reply) throws -> String {
        #expect(reply.status == .accepted, "\(reply.json)")
        return try #require((reply["proposal"] as? [String: Any])?["id"] as? String).lowercased()
    }

    static func actions(_ harness: AdminHarness) async throws -> [(String, String)] {
        var entries: [(String, String)] = []
        for try await (action, actor) in try await harness.database.query("SELECT action, actor FROM audit_log ORDER BY id").decode((String, String).self) {
            entries.append((action, actor))
        }
        return entries
    }

    @Test("a guarded publish waits for a second key; its proposer cannot approve it; the approved change is the one proposed")
    func publish() async throws {
        try await AdminHarness.run { harness in
            let (ana, ben) = try await Self.guardedApp(harness, ["publish", "kill_switch"])
            let config: [String: Any] = ["api": "https://api.example.com", "timeout": 30]
            let id = try Self.proposalID(try await harness.upload(config, version: "2.*", key: ana))
            #expect((try await harness.call(.get, "/v1/admin/config", credential: ana)["patterns"] as? [Any])?.isEmpty == true, "published before approval")

            let own = try await harness.call(.post, "/v1/admin/changes/\(id)/approve", credential: ana)
            #expect(own.status == .forbidden && own.errorCode == "self_approval")

            let detail = try await harness.call(.get, "/v1/admin/changes/\(id)", credential: ben)
            #expect(((detail["request"] as? [String: Any])?["config"] as? [String: Any])?["timeout"] as? Int == 30)
            let approved = try await harness.call(.post, "/v1/admin/changes/\(id)/approve", credential: ben)
            #expect(approved.status == .ok && (approved["message"] as? String)?.contains("Published revision 1") == true, "\(approved.json)")
            #expect((approved["change"] as? [String: Any])?["state"] as? String == "applied")
            let body = try await harness.call(.get, "/v1/admin/config/body?version=2.*", credential: ben)
            #expect((body["config"] as? [String: Any])?["api"] as? String == "https://api.example.com")

            let again = try await harness.call(.post, "/v1/admin/changes/\(id)/approve", credential: ben)
            #expect(again.status == .conflict && again.errorCode == "proposal_decided")

            // A guarded kill switch, rejected: nothing switched off.
            let kill = try Self.proposalID(
                try await harness.call(.post, "/v1/admin/kill-switch", credential: ben, json: ["versions": ["1.0.0"], "enabled": false, "reason": "update"]))
            let rejected = try await harness.call(.post, "/v1/admin/changes/\(kill)/reject", credential: ana, json: ["reason": "not now"])
            #expect(rejected.status == .ok && (rejected["change"] as? [String: Any])?["state"] as? String == "rejected")
            #expect((try await harness.call(.get, "/v1/admin/kill-switch", credential: ana)["killed"] as? [Any])?.isEmpty == true)

            // What is not guarded applies at once.
            #expect(try await harness.call(.post, "/v1/admin/emergency-revoke", credential: ana, json: ["version": "3.*"]).status == .ok)

            let actions = try await Self.actions(harness).map(\.0)
            #expect(actions.contains("change.propose") && actions.contains("change.approve") && actions.contains("change.reject"))
            let applied = try await Self.actions(harness).first { $0.0 == "config.upload" }
            #expect(applied?.1.hasPrefix("key:") == true)
            let listed = try await harness.call(.get, "/v1/admin/changes", credential: ana)
            #expect((listed["changes"] as? [[String: Any]])?.map { $0["state"] as? String } == ["rejected", "applied"])
        }
    }

    @Test("a proposal whose base moved is stale; an expired one is refused; the policy itself is guarded")
    func staleAndExpired() async throws {
        try await AdminHarness.run { harness in
            let (ana, ben) = try await Self.guardedApp(harness, ["publish", "policy"])
            let first = try Self.proposalID(try await harness.upload(["v": 1], version: "*", key: ana))
            let second = try Self.proposalID(try await harness.upload(["v": 2], version: "*", key: ana))
            #expect(try await harness.call(.post, "/v1/admin/changes/\(first)/approve", credential: ben).status == .ok)
            let stale = try await harness.call(.post, "/v1/admin/changes/\(second)/approve", credential: ben)
            #expect(stale.status == .conflict && stale.errorCode == "proposal_stale", "\(stale.json)")
            let listed = try await harness.call(.get, "/v1/admin/changes", credential: ben)
            #expect((listed["changes"] as? [[String: Any]])?.first { ($0["id"] as? String)?.lowercased() == second }?["state"] as? String == "failed")

            let third = try Self.proposalID(try await harness.upload(["v": 3], version: "*", key: ana))
            try await harness.database.query("UPDATE change_proposals SET expires_at = now() - interval '1 minute' WHERE proposal_id = \(UUID(uuidString: third)!)")
            let expired = try await harness.call(.post, "/v1/admin/changes/\(third)/approve", credential: ben)
            #expect(expired.status == .conflict && expired.errorCode == "proposal_expired")

            // Lifting the rule is itself a guarded change.
            let lift = try await harness.call(.put, "/v1/admin/policy", credential: ana, json: ["requireApproval": []])
            let liftID = try Self.proposalID(lift)
            #expect((try await harness.call(.get, "/v1/admin/policy", credential: ana)["policy"] as? [String: Any])?["requireApproval"] as? [String] == ["publish", "policy"])
            // Only a person approves a policy change: a key is refused; the operator's break-glass lifts it here.
            let byKey = try await harness.call(.post, "/v1/admin/changes/\(liftID)/approve", credential: ben)
            #expect(byKey.status == .forbidden && byKey.errorCode == "person_required", "\(byKey.json)")
            let lifted = try await harness.call(
                .post, "/v1/admin/changes/\(liftID)/break-glass", credential: AdminHarness.operatorToken, json: ["reason": "no owner has signed in yet"])
            #expect(lifted.status == .ok, "\(lifted.json)")
            #expect(try await harness.upload(["v": 4], version: "*", key: ana).status == .ok)
        }
    }

    @Test("kill-switch, emergency and device revocation proposals go stale when what they were made against changed")
    func switchesGoStale() async throws {
        try await AdminHarness.run { harness in
            let (ana, ben) = try await Self.guardedApp(harness, ["kill_switch", "revocation"])
            // Two proposals against 2.1.3 switched on; the second approved first switches it off.
            let older = try Self.proposalID(
                try await harness.call(.post, "/v1/admin/kill-switch", credential: ana, json: ["versions": ["2.1.3"], "enabled": false, "reason": "crash A"]))
            let newer = try Self.proposalID(
                try await harness.call(.post, "/v1/admin/kill-switch", credential: ana, json: ["versions": ["2.1.3"], "enabled": false, "reason": "crash B"]))
            #expect(try await harness.call(.post, "/v1/admin/changes/\(newer)/approve", credential: ben).status == .ok)
            let staleSwitch = try await harness.call(.post, "/v1/admin/changes/\(older)/approve", credential: ben)
            #expect(staleSwitch.status == .conflict && staleSwitch.errorCode == "proposal_stale", "\(staleSwitch.json)")
            let killed = try await harness.call(.get, "/v1/admin/kill-switch", credential: ana)
            #expect("\(killed.json)".contains("crash B") && !"\(killed.json)".contains("crash A"), "\(killed.json)")

            // Two emergency revocations of one pattern: the one approved second is stale.
            let first = try Self.proposalID(try await harness.call(.post, "/v1/admin/emergency-revoke", credential: ana, json: ["version": "2.*"]))
            let second = try Self.proposalID(try await harness.call(.post, "/v1/admin/emergency-revoke", credential: ana, json: ["version": "2.*"]))
            #expect(try await harness.call(.post, "/v1/admin/changes/\(first)/approve", credential: ben).status == .ok)
            let staleRevocation = try await harness.call(.post, "/v1/admin/changes/\(second)/approve", credential: ben)
            #expect(staleRevocation.status == .conflict && staleRevocation.errorCode == "proposal_stale", "\(staleRevocation.json)")

            // Two revocations of one device: once it is revoked, the other proposal is stale.
            let keyID: [UInt8] = Array(repeating: 7, count: 32)
            try await harness.database.query(
                """
                INSERT INTO attested_keys (key_id, app_id, public_key, receipt, counter, environment)
                VALUES (\(Data(keyID)), \(AdminHarness.appID), '\\x00'::bytea, '\\x00'::bytea, 0, 'production')
                """)
            let device = ["keyId": Base64.urlEncode(keyID), "reason": "key seen from two devices"]
            let one = try Self.proposalID(try await harness.call(.post, "/v1/admin/devices/revoke", credential: ana, json: device))
            let other = try Self.proposalID(try await harness.call(.post, "/v1/admin/devices/revoke", credential: ana, json: device))
            #expect(try await harness.call(.post, "/v1/admin/changes/\(one)/approve", credential: ben).status == .ok)
            let staleDevice = try await harness.call(.post, "/v1/admin/changes/\(other)/approve", credential: ben)
            #expect(staleDevice.status == .conflict && staleDevice.errorCode == "proposal_stale", "\(staleDevice.json)")
        }
    }

    @Test("a schema change is reviewed too: proposed, approved by another key, then enforced; an unusable schema is refused before it is proposed")
    func schema() async throws {
        try await AdminHarness.run { harness in
            let (ana, ben) = try await Self.guardedApp(harness, ["schema"])
            let unusable = try await harness.call(.put, "/v1/admin/config/schema", credential: ana, json: ["schema": ["oneOf": []]])
            #expect(unusable.status == .unprocessableContent && unusable.errorCode == "schema_invalid")
            let id = try Self.proposalID(
                try await harness.call(.put, "/v1/admin/config/schema", credential: ana, json: ["schema": ["required": ["endpoint"]]]))
            #expect(try await harness.upload(["other": 1], version: "*", key: ana).status == .ok, "enforced before approval")
            // The published config breaks the proposed schema: approving it is refused, and the proposal fails.
            let refused = try await harness.call(.post, "/v1/admin/changes/\(id)/approve", credential: ben)
            #expect(refused.status == .unprocessableContent && refused.errorCode == "config_invalid", "\(refused.json)")
            let again = try Self.proposalID(
                try await harness.call(.put, "/v1/admin/config/schema", credential: ana, json: ["version": "2.*", "schema": ["required": ["endpoint"]]]))
            #expect(try await harness.call(.post, "/v1/admin/changes/\(again)/approve", credential: ben).status == .ok)
            #expect(try await harness.upload(["other": 1], version: "2.*", key: ana).errorCode == "config_invalid")
            let detach = try Self.proposalID(try await harness.call(.delete, "/v1/admin/config/schema?version=2.*", credential: ana))
            #expect(try await harness.call(.post, "/v1/admin/changes/\(detach)/approve", credential: ben).status == .ok)
            #expect(try await harness.upload(["other": 1], version: "2.*", key: ana).status == .ok)
        }
    }

    @Test("the person who decides a proposal holds the role its change needs: an editor neither approves nor rejects an owner's relay, an owner does; an editor still decides a kill switch")
    func decidersHoldTheChangesRole() async throws {
        try await AdminHarness.run { harness in
            let appID = AdminHarness.appID
            let ana = try await harness.createKey(name: "ana")
            let owner = try await harness.person("olive@example.com", in: appID)
            let editor = try await harness.person("eddie@example.com", in: appID, role: "editor")
            #expect(try await harness.call(.put, "/v1/admin/policy", credential: ana, json: ["requireApproval": ["relay", "kill_switch"]]).status == .ok)
            let relay: [String: Any] = [
                "upstream": "https://api.openai.com", "methods": ["POST"], "paths": ["/v1/chat/completions"], "headers": ["Authorization": "Bearer sk-x"],
            ]
            let id = try Self.proposalID(try await harness.call(.put, "/v1/admin/relays/openai", credential: ana, json: relay))
            let approved = try await editor.call(.post, "/v1/admin/changes/\(id)/approve", app: appID)
            #expect(approved.status == .forbidden && approved.errorCode == "role_too_low", "\(approved.json)")
            let vetoed = try await editor.call(.post, "/v1/admin/changes/\(id)/reject", ["reason": "no"], app: appID)
            #expect(vetoed.status == .forbidden && vetoed.errorCode == "role_too_low", "\(vetoed.json)")
            let byOwner = try await owner.call(.post, "/v1/admin/changes/\(id)/approve", app: appID)
            #expect(byOwner.status == .ok, "\(byOwner.json)")

            let kill = try Self.proposalID(
                try await harness.call(.post, "/v1/admin/kill-switch", credential: ana, json: ["versions": ["1.0.0"], "enabled": false, "reason": "Please update"]))
            let killApproved = try await editor.call(.post, "/v1/admin/changes/\(kill)/approve", app: appID)
            #expect(killApproved.status == .ok, "\(killApproved.json)")
        }
    }

    @Test("a relay set or removed waits for a second key; the proposal shows its header names, never their values; an overtaken proposal is stale")
    func relay() async throws {
        try await AdminHarness.run { harness in
            let (ana, ben) = try await Self.guardedApp(harness, ["relay"])
            let secret = "sk-approval-secret-0123456789"
            let relay: [String: Any] = [
                "upstream": "https://api.openai.com", "methods": ["POST"], "paths": ["/v1/chat/completions"],
                "headers": ["Authorization": "Bearer \(secret)"],
            ]
            let id = try Self.proposalID(try await harness.call(.put, "/v1/admin/relays/openai", credential: ana, json: relay))
            #expect((try await harness.call(.get, "/v1/admin/relays", credential: ana)["relays"] as? [Any])?.isEmpty == true, "made before approval")
            let read = try await harness.call(.get, "/v1/admin/changes/\(id)", credential: ben)
            let body = String(decoding: try JSONSerialization.data(withJSONObject: read.json), as: UTF8.self)
            #expect(read.status == .ok && body.contains("Authorization") && body.contains("(withheld)") && !body.contains(secret), "\(body)")
            #expect(((read["change"] as? [String: Any])?["summary"] as? String)?.contains("injects Authorization") == true, "\(read.json)")
            let listed = String(decoding: try JSONSerialization.data(withJSONObject: try await harness.call(.get, "/v1/admin/changes", credential: ben).json), as: UTF8.self)
            #expect(!listed.contains(secret))
            let approved = try await harness.call(.post, "/v1/admin/changes/\(id)/approve", credential: ben)
            #expect(approved.status == .ok, "\(approved.json)")
            let relays = try await harness.call(.get, "/v1/admin/relays", credential: ana)["relays"] as? [[String: Any]] ?? []
            #expect(relays.map { $0["name"] as? String } == ["openai"] && relays.first?["headerNames"] as? [String] == ["Authorization"])
            // Approved exactly as proposed: the sealed header is the proposal's.
            let sealed = try await harness.database.query("SELECT count(*) FROM relays WHERE headers_ciphertext IS NOT NULL").decode(Int.self)
            for try await count in sealed { #expect(count == 1) }

            // A proposal that keeps the headers and moves them says so plainly; one that moves them to another origin is refused.
            let rebased = try await harness.call(
                .put, "/v1/admin/relays/openai", credential: ana, json: ["upstream": "https://api.openai.com/v2", "methods": ["POST"], "paths": ["/v1/**"]])
            let rebasedID = try Self.proposalID(rebased)
            let rebasedSummary = ((try await harness.call(.get, "/v1/admin/changes/\(rebasedID)", credential: ben)["change"] as? [String: Any])?["summary"] as? String) ?? ""
            #expect(rebasedSummary.contains("SENDS ITS EXISTING SEALED HEADERS (Authorization) TO THIS NEW UPSTREAM"), "\(rebasedSummary)")
            #expect(try await harness.call(.post, "/v1/admin/changes/\(rebasedID)/reject", credential: ben, json: ["reason": "not there"]).status == .ok)
            let elsewhere = try await harness.call(
                .put, "/v1/admin/relays/openai", credential: ana, json: ["upstream": "https://attacker.example", "methods": ["POST"], "paths": ["/v1/**"]])
            #expect(elsewhere.status == .badRequest && elsewhere.errorCode == "relay_headers_required", "\(elsewhere.json)")

            // Two changes proposed against the relay as it is: the one approved second is stale.
            let first = try Self.proposalID(try await harness.call(.put, "/v1/admin/relays/openai", credential: ana, json: ["upstream": "https://api.openai.com", "methods": ["POST"], "paths": ["/v1/**"]]))
            let second = try Self.proposalID(try await harness.call(.delete, "/v1/admin/relays/openai", credential: ana))
            #expect(try await harness.call(.post, "/v1/admin/changes/\(first)/approve", credential: ben).status == .ok)
            let stale = try await harness.call(.post, "/v1/admin/changes/\(second)/approve", credential: ben)
            #expect(stale.status == .conflict, "\(stale.json)")
            let removal = try Self.proposalID(try await harness.call(.delete, "/v1/admin/relays/openai", credential: ana))
            #expect(try await harness.call(.post, "/v1/admin/changes/\(removal)/approve", credential: ben).status == .ok)
            #expect((try await harness.call(.get, "/v1/admin/relays", credential: ana)["relays"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("break-glass is the operator's alone, needs a reason, applies at once and is audited as such")
    func breakGlass() async throws {
        try await AdminHarness.run { harness in
            let (ana, ben) = try await Self.guardedApp(harness, ["publish"])
            let id = try Self.proposalID(try await harness.upload(["urgent": true], version: "*", key: ana))
            let byKey = try await harness.call(.post, "/v1/admin/changes/\(id)/break-glass", credential: ben, json: ["reason": "the other approver is away"])
            #expect(byKey.status == .forbidden && byKey.errorCode == "operator_required")
            let noReason = try await harness.call(.post, "/v1/admin/changes/\(id)/break-glass", credential: AdminHarness.operatorToken, json: [:])
            #expect(noReason.status == .badRequest)
            let applied = try await harness.call(
                .post, "/v1/admin/changes/\(id)/break-glass", credential: AdminHarness.operatorToken, json: ["reason": "incident 42: approver unreachable"])
            #expect(applied.status == .ok && (applied["message"] as? String)?.contains("break-glass") == true, "\(applied.json)")
            let entry = try await Self.actions(harness).last { $0.0 == "change.break_glass" }
            #expect(entry?.1 == "operator")
            #expect((try await harness.call(.get, "/v1/admin/audit/verify", credential: ana))["intact"] as? Bool == true)
        }
    }
}
