import Foundation
import HTTPTypes
import PostgresNIO
import SesameTestSupport
import Testing

@testable import AdminService

/// The two-person rule counts principals, not credentials: one key, one person, or what either
/// made, cannot pass it alone (README, "Two-person approval").
@Suite("Admin: a second person is a second principal", .timeLimit(.minutes(3)))
struct SecondPrincipalTests {
    static let appA = AdminHarness.appID

    static func approve(_ harness: AdminHarness, _ id: String, with credential: String) async throws -> AdminHarness.Reply {
        try await harness.call(.post, "/v1/admin/changes/\(id)/approve", credential: credential)
    }

    @Test("under the rule a key mints a key that is refused until another principal approves; what the proposer made cannot approve; a key made after a proposal cannot approve it")
    func keysMadeByTheProposer() async throws {
        try await AdminHarness.run { harness in
            let (ana, ben) = try await ApprovalTests.guardedApp(harness, ["publish"])

            // Ana mints a second key: it is made waiting for a second principal.
            let minted = try await harness.call(.post, "/v1/admin/keys/create", credential: ana, json: ["teamId": AdminHarness.teamID, "bundleId": AdminHarness.bundleID, "keyName": "ana-2"])
            let mintID = try ApprovalTests.proposalID(minted)
            let anaTwo = try #require(minted["key"] as? String)
            #expect(try await harness.call(.get, "/v1/admin/config", credential: anaTwo).status == .unauthorized, "a key waiting for approval was accepted")
            let listed = try await harness.call(.get, "/v1/admin/keys", credential: ana)
            let entry = (listed["keys"] as? [[String: Any]])?.first { $0["name"] as? String == "ana-2" }
            #expect(entry?["createdBy"] as? String == "key:" + (try #require(try await Self.keyID(harness, name: "ana"))))
            #expect((entry?["pendingApproval"] as? String)?.lowercased() == mintID)
            // Ana cannot approve her own key's making; Ben can.
            #expect(try await Self.approve(harness, mintID, with: ana).errorCode == "self_approval")
            #expect(try await Self.approve(harness, mintID, with: ben).status == .ok)
            #expect(try await harness.call(.get, "/v1/admin/config", credential: anaTwo).status == .ok)

            // A proposal of Ana's: her second key is still Ana.
            let publish = try ApprovalTests.proposalID(try await harness.upload(["v": 1], version: "*", key: ana))
            let own = try await Self.approve(harness, publish, with: anaTwo)
            #expect(own.status == .forbidden && own.errorCode == "self_approval", "\(own.json)")

            // A key the operator makes now is a principal, but made after the proposal: not its second person.
            let late = try await harness.createKey(name: "carl")
            let tooNew = try await Self.approve(harness, publish, with: late)
            #expect(tooNew.status == .forbidden && tooNew.errorCode == "approver_too_new", "\(tooNew.json)")
            #expect(try await Self.approve(harness, publish, with: ben).status == .ok)

            // Key creation and its approval reach webhooks' events.
            #expect(WebhookEvent.named(forAction: "key.create") == "key.created")
            #expect(WebhookEvent.named(forAction: "account.invite") == "account.changed")
            #expect(WebhookEvent.named(forAction: "account.role") == "account.changed")
        }
    }

    @Test("a proposal whose proposer's key was revoked is void: approving it answers 409 proposer_gone")
    func revokedProposer() async throws {
        try await AdminHarness.run { harness in
            let (ana, ben) = try await ApprovalTests.guardedApp(harness, ["publish"])
            let publish = try ApprovalTests.proposalID(try await harness.upload(["v": 1], version: "*", key: ana))
            let anaID = try #require(try await Self.keyID(harness, name: "ana"))
            #expect(try await harness.call(.post, "/v1/admin/keys/revoke", credential: ben, json: ["keyId": anaID]).status == .ok)
            let void = try await Self.approve(harness, publish, with: ben)
            #expect(void.status == .conflict && void.errorCode == "proposer_gone", "\(void.json)")
            #expect((try await harness.call(.get, "/v1/admin/config", credential: ben)["patterns"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("an owner cannot pass the rule alone: an invitation opens and a role changes only once another owner approves; a key approves neither nor a policy change; a person who joined after a proposal cannot approve it")
    func peopleUnderTheRule() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            let alice = try await harness.person("alice@example.com", in: Self.appA)
            let bob = try await harness.person("bob@example.com", in: Self.appA)
            #expect(try await alice.call(.put, "/v1/admin/policy", ["requireApproval": ["publish", "policy"]], app: Self.appA).status == .ok)

            // Alice invites an address she controls: the link does not open until someone else approves.
            let invited = try await alice.call(.post, "/v1/admin/accounts/invite", ["email": "sock@example.com", "role": "owner"], app: Self.appA)
            let inviteID = try ApprovalTests.proposalID(invited)
            let token = try AdminHarness.token(ofInvitation: invited)
            let closed = try await DashboardPerson("anyone", client: harness.client).call(.post, "/dashboard/api/invitation", ["token": token])
            #expect(closed.errorCode == "invitation_invalid", "\(closed.json)")
            #expect(try await alice.call(.post, "/v1/admin/changes/\(inviteID)/approve", app: Self.appA).errorCode == "self_approval")
            #expect(try await Self.approve(harness, inviteID, with: key).errorCode == "person_required")
            #expect(try await bob.call(.post, "/v1/admin/changes/\(inviteID)/approve", app: Self.appA).status == .ok)
            let open = try await DashboardPerson("anyone", client: harness.client).call(.post, "/dashboard/api/invitation", ["token": token])
            #expect(open["email"] as? String == "sock@example.com", "\(open.json)")

            // A role change is proposed too.
            let demote = try await alice.call(.put, "/v1/admin/accounts/bob@example.com", ["role": "viewer"], app: Self.appA)
            let demoteID = try ApprovalTests.proposalID(demote)
            #expect(try await bob.call(.post, "/v1/admin/changes/\(demoteID)/reject", ["reason": "no"], app: Self.appA).status == .ok)

            // A policy change: not by a key; a person who joined after it was proposed cannot approve it.
            let lift = try ApprovalTests.proposalID(try await alice.call(.put, "/v1/admin/policy", ["requireApproval": []], app: Self.appA))
            #expect(try await Self.approve(harness, lift, with: key).errorCode == "person_required")
            let late = try await harness.person("late@example.com", in: Self.appA)
            let tooNew = try await late.call(.post, "/v1/admin/changes/\(lift)/approve", app: Self.appA)
            #expect(tooNew.status == .forbidden && tooNew.errorCode == "approver_too_new", "\(tooNew.json)")
            #expect(try await bob.call(.post, "/v1/admin/changes/\(lift)/approve", app: Self.appA).status == .ok)
            // With the rule lifted, an invitation opens at once again.
            #expect(try await alice.call(.post, "/v1/admin/accounts/invite", ["email": "dan@example.com", "role": "viewer"], app: Self.appA).status == .ok)
        }
    }

    @Test("two approvals of two proposals against the same revision, at the same moment: exactly one applies, the other is 409 proposal_stale (5 rounds)")
    func racingApprovals() async throws {
        try await AdminHarness.run(connections: .many) { harness in
            let (ana, ben) = try await ApprovalTests.guardedApp(harness, ["publish"])
            for round in 0..<5 {
                let first = try ApprovalTests.proposalID(try await harness.upload(["round": round, "by": "first"], version: "*", key: ana))
                let second = try ApprovalTests.proposalID(try await harness.upload(["round": round, "by": "second"], version: "*", key: ana))
                async let one = Self.approve(harness, first, with: ben)
                async let two = Self.approve(harness, second, with: ben)
                let replies = try await [one, two]
                #expect(replies.filter { $0.status == .ok }.count == 1, "round \(round): \(replies.map(\.json))")
                #expect(replies.filter { $0.errorCode == "proposal_stale" }.count == 1, "round \(round): \(replies.map(\.json))")
            }
            let history = try await harness.call(.get, "/v1/admin/config/history?version=*", credential: ben)
            #expect((history["revisions"] as? [Any])?.count == 5)
        }
    }

    static func keyID(_ harness: AdminHarness, name: String) async throws -> String? {
        let rows = try await harness.database.query("SELECT key_id FROM provisioning_keys WHERE name = \(name)")
        for try await id in rows.decode(UUID.self) { return id.uuidString.lowercased() }
        return nil
    }
}

@Suite("Admin: proposals keep no plaintext", .timeLimit(.minutes(3)))
struct SealedProposalTests {
    static func stored(_ harness: AdminHarness, _ id: String) async throws -> (plain: String?, sealed: Data?, digest: Data?) {
        let rows = try await harness.database.query(
            "SELECT request, request_sealed, request_sha256 FROM change_proposals WHERE proposal_id = \(UUID(uuidString: id)!)")
        for try await row in rows.decode((String?, Data?, Data?).self) { return row }
        throw CancellationError()
    }

    @Test("a proposed publish is stored sealed (the config's values are not in the row); once decided or expired only its SHA-256 is kept")
    func sealedThenDropped() async throws {
        try await AdminHarness.run { harness in
            let (ana, ben) = try await ApprovalTests.guardedApp(harness, ["publish"])
            let secret = "sk_live_do_not_store_me"
            let id = try ApprovalTests.proposalID(try await harness.upload(["api_key": secret], version: "*", key: ana))
            let pending = try await Self.stored(harness, id)
            #expect(pending.plain == nil && pending.sealed != nil && pending.digest?.count == 32)
            #expect(!String(decoding: try #require(pending.sealed), as: UTF8.self).contains(secret), "the sealed request holds the secret in clear")
            // The second person reads it as proposed.
            let detail = try await harness.call(.get, "/v1/admin/changes/\(id)", credential: ben)
            #expect(((detail["request"] as? [String: Any])?["config"] as? [String: Any])?["api_key"] as? String == secret)

            #expect(try await harness.call(.post, "/v1/admin/changes/\(id)/approve", credential: ben).status == .ok)
            let decided = try await Self.stored(harness, id)
            #expect(decided.plain == nil && decided.sealed == nil && decided.digest == pending.digest)
            #expect(try await harness.call(.get, "/v1/admin/changes/\(id)", credential: ben)["request"] is NSNull)

            // An expired proposal's request goes at the next listing.
            let late = try ApprovalTests.proposalID(try await harness.upload(["api_key": secret + "2"], version: "*", key: ana))
            try await harness.database.query("UPDATE change_proposals SET expires_at = now() - interval '1 minute' WHERE proposal_id = \(UUID(uuidString: late)!)")
            _ = try await harness.call(.get, "/v1/admin/changes", credential: ben)
            #expect(try await Self.stored(harness, late).sealed == nil)
            #expect(try await harness.call(.post, "/v1/admin/changes/\(late)/approve", credential: ben).errorCode == "proposal_expired")
        }
    }
}

@Suite("Admin: a removed person keeps no way back", .timeLimit(.minutes(3)))
struct RemovedPersonTests {
    static let appA = AdminHarness.appID

    @Test("removing an owner ends the invitations they sent; owners list and cancel invitations; accepting an invitation never lowers a role")
    func invitationsEndWithTheirSender() async throws {
        try await AdminHarness.run { harness in
            _ = try await harness.createKey()
            let alice = try await harness.person("alice@example.com", in: Self.appA)
            let bob = try await harness.person("bob@example.com", in: Self.appA)
            let sent = try await alice.call(.post, "/v1/admin/accounts/invite", ["email": "friend@example.com", "role": "owner"], app: Self.appA)
            let token = try AdminHarness.token(ofInvitation: sent)
            let listed = try await bob.call(.get, "/v1/admin/accounts/invitations", app: Self.appA)
            let open = listed["invitations"] as? [[String: Any]] ?? []
            #expect(open.count == 1 && open.first?["invitedBy"] as? String == "account:alice@example.com" && open.first?["email"] as? String == "friend@example.com", "\(listed.json)")

            #expect(try await bob.call(.delete, "/v1/admin/accounts/alice@example.com", app: Self.appA).status == .ok)
            let closed = try await DashboardPerson("anyone", client: harness.client).call(.post, "/dashboard/api/invitation", ["token": token])
            #expect(closed.errorCode == "invitation_invalid", "the removed owner's invitation still opens: \(closed.json)")
            #expect((try await bob.call(.get, "/v1/admin/accounts/invitations", app: Self.appA)["invitations"] as? [Any])?.isEmpty == true)

            // Cancelled by an owner.
            let other = try await bob.call(.post, "/v1/admin/accounts/invite", ["email": "temp@example.com", "role": "viewer"], app: Self.appA)
            let otherToken = try AdminHarness.token(ofInvitation: other)
            let id = try #require(((try await bob.call(.get, "/v1/admin/accounts/invitations", app: Self.appA))["invitations"] as? [[String: Any]])?.first?["id"] as? String)
            #expect(try await bob.call(.delete, "/v1/admin/accounts/invitations/\(id)", app: Self.appA).status == .ok)
            #expect(try await bob.call(.delete, "/v1/admin/accounts/invitations/\(id)", app: Self.appA).errorCode == "invitation_not_found")
            let cancelled = try await DashboardPerson("anyone", client: harness.client).call(.post, "/dashboard/api/invitation", ["token": otherToken])
            #expect(cancelled.errorCode == "invitation_invalid")

            // Bob, the last owner, accepts an invitation as viewer: he stays owner.
            let demoting = try await harness.invitation("bob@example.com", to: Self.appA, role: "viewer")
            #expect(try await bob.call(.post, "/dashboard/api/invitation/accept", ["invitation": demoting]).status == .ok)
            let members = try await bob.call(.get, "/v1/admin/accounts", app: Self.appA)["members"] as? [[String: Any]]
            #expect(members?.first { $0["email"] as? String == "bob@example.com" }?["role"] as? String == "owner", "\(String(describing: members))")
        }
    }

    @Test("removing a person with revokeWhatTheyMade revokes the keys that stand for them, and the backend keys, debug tokens and webhooks they or those keys made; others' survive")
    func whatTheyMadeGoesWithThem() async throws {
        try await AdminHarness.run { harness in
            let operatorKey = try await harness.createKey()
            let alice = try await harness.person("alice@example.com", in: Self.appA)
            let bob = try await harness.person("bob@example.com", in: Self.appA)
            let hers = try #require(try await alice.call(.post, "/v1/admin/keys/create", ["teamId": AdminHarness.teamID, "bundleId": AdminHarness.bundleID, "keyName": "alice-ci"], app: Self.appA)["key"] as? String)
            let descendant = try #require(
                try await harness.call(.post, "/v1/admin/keys/create", credential: hers, json: ["teamId": AdminHarness.teamID, "bundleId": AdminHarness.bundleID, "keyName": "made-by-her-key"])["key"] as? String)
            let bobs = try #require(try await bob.call(.post, "/v1/admin/keys/create", ["teamId": AdminHarness.teamID, "bundleId": AdminHarness.bundleID, "keyName": "bob-ci"], app: Self.appA)["key"] as? String)
            #expect(try await harness.call(.post, "/v1/admin/debug-tokens", credential: hers, json: ["name": "her-sim", "ttl": "1d"]).status == .ok)
            #expect(try await harness.call(.post, "/v1/admin/debug-tokens", credential: bobs, json: ["name": "bob-sim", "ttl": "1d"]).status == .ok)
            #expect(try await alice.call(.post, "/v1/admin/webhooks", ["url": "https://hooks.example.com/alice"], app: Self.appA).status == .ok)
            // Made on the dashboard, as a person: the maker is recorded all the same.
            #expect(try await alice.call(.post, "/v1/admin/debug-tokens", ["name": "her-dashboard-sim", "ttl": "1d"], app: Self.appA).status == .ok)
            let herBackendKey = try #require(
                (try await alice.call(.post, "/v1/admin/backend-keys", ["name": "her-api"], app: Self.appA)["key"] as? [String: Any])?["keyId"] as? String)
            let herKeysBackendKey = try #require(
                (try await harness.call(.post, "/v1/admin/backend-keys", credential: hers, json: ["name": "her-key-api"])["key"] as? [String: Any])?["keyId"] as? String)
            let bobsBackendKey = try #require(
                (try await bob.call(.post, "/v1/admin/backend-keys", ["name": "bob-api"], app: Self.appA)["key"] as? [String: Any])?["keyId"] as? String)
            #expect(try await harness.call(.post, "/v1/admin/webhooks", credential: bobs, json: ["url": "https://hooks.example.com/bob"]).status == .ok)

            let removed = try await bob.call(.delete, "/v1/admin/accounts/alice@example.com?revokeWhatTheyMade=true", app: Self.appA)
            #expect(removed.status == .ok, "\(removed.json)")
            for key in [hers, descendant] {
                #expect(try await harness.call(.get, "/v1/admin/keys", credential: key).status == .unauthorized, "a key that stands for her still works")
            }
            for key in [bobs, operatorKey] { #expect(try await harness.call(.get, "/v1/admin/keys", credential: key).status == .ok) }
            let tokens = try await harness.call(.get, "/v1/admin/debug-tokens", credential: bobs)["tokens"] as? [[String: Any]] ?? []
            #expect(tokens.first { $0["name"] as? String == "her-sim" }?["revokedAt"] != nil, "\(tokens)")
            #expect(tokens.first { $0["name"] as? String == "her-dashboard-sim" }?["revokedAt"] != nil, "\(tokens)")
            let backendKeys = try await harness.call(.get, "/v1/admin/backend-keys", credential: bobs)["keys"] as? [[String: Any]] ?? []
            let revoked = Dictionary(uniqueKeysWithValues: backendKeys.compactMap { key in (key["keyId"] as? String).map { ($0, key["revokedAt"] != nil) } })
            #expect(revoked == [herBackendKey: true, herKeysBackendKey: true, bobsBackendKey: false], "\(backendKeys)")
            #expect(tokens.first { $0["name"] as? String == "bob-sim" }.map { $0["revokedAt"] == nil } == true, "\(tokens)")
            let hooks = try await harness.call(.get, "/v1/admin/webhooks", credential: bobs)["webhooks"] as? [[String: Any]] ?? []
            #expect(hooks.map { $0["url"] as? String } == ["https://hooks.example.com/bob"], "\(hooks)")
        }
    }
}
