import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import SesameTestSupport
import Testing
import WebAuthnTesting

/// The dashboard's people through the HTTP API, with software passkeys: who may join an account,
/// and how owners change roles, remove people and manage a person's passkeys and sessions.
@Suite("Dashboard people", .timeLimit(.minutes(3)))
struct DashboardPeopleTests {
    static let appA = AdminHarness.appID
    static let appB = "\(AdminHarness.teamID).com.example.other"

    @Test("an owner of another app who invites an existing person's email cannot add a passkey to that account or accept as someone else")
    func invitationsCannotTakeOverAccounts() async throws {
        try await AdminHarness.run { harness in
            _ = try await harness.createKey()
            _ = try await harness.createKey(bundleID: "com.example.other")
            let alice = try await harness.person("alice@example.com", in: Self.appA)
            let mallory = try await harness.person("mallory@example.com", in: Self.appB)

            // Mallory, owner of B, invites Alice's email and keeps the link.
            let invited = try await mallory.call(.post, "/v1/admin/accounts/invite", ["email": "alice@example.com", "role": "viewer"], app: Self.appB)
            #expect(invited.status == .ok)
            let token = try AdminHarness.token(ofInvitation: invited)
            let opened = try await DashboardPerson("anyone", client: harness.client).call(.post, "/dashboard/api/invitation", ["token": token])
            #expect(opened["accountExists"] as? Bool == true && opened["email"] as? String == "alice@example.com")

            // A new passkey is refused for the existing account, and Mallory cannot accept it as herself.
            let attacker = DashboardPerson("alice@example.com", client: harness.client)
            let refused = try await attacker.register(invitation: token)
            #expect(refused.status == .conflict && refused.errorCode == "account_exists", "\(refused.json)")
            let taken = try await mallory.call(.post, "/dashboard/api/invitation/accept", ["invitation": token])
            #expect(taken.status == .forbidden && taken.errorCode == "invitation_for_another_account", "\(taken.json)")
            #expect(try await mallory.apps() == [Self.appB])
            #expect(try await mallory.call(.get, "/v1/admin/config", app: Self.appA).errorCode == "app_not_found")

            // Alice accepts it, signed in with her own passkey; the link was not spent by the refusals.
            #expect(try await alice.signIn().status == .ok)
            #expect(try await alice.call(.post, "/dashboard/api/invitation/accept", ["invitation": token]).status == .ok)
            #expect(try await alice.apps() == [Self.appA, Self.appB].sorted())
            #expect(try await alice.call(.post, "/dashboard/api/invitation/accept", ["invitation": token]).errorCode == "invitation_invalid")
        }
    }

    @Test("one invitation registered by eight passkeys at once: exactly one becomes the account, the others are refused")
    func parallelRegistration() async throws {
        try await AdminHarness.run(connections: .many) { harness in
            _ = try await harness.createKey()
            let token = try await harness.invitation("race@example.com", to: Self.appA)
            // Each ceremony prepared first, so that the eight registrations reach the service at once.
            var prepared: [(person: DashboardPerson, fields: [String: String])] = []
            for _ in 0..<8 {
                let person = DashboardPerson("race@example.com", client: harness.client)
                let options = try await person.call(.post, "/dashboard/api/register/options", ["invitation": token])
                var fields = person.passkey.registration(challenge: try #require(options["challenge"] as? String))
                fields["invitation"] = token
                prepared.append((person, fields))
            }
            let replies = try await withThrowingTaskGroup(of: AdminHarness.Reply.self) { group in
                for (person, fields) in prepared { group.addTask { try await person.call(.post, "/dashboard/api/register", fields) } }
                return try await group.reduce(into: [AdminHarness.Reply]()) { $0.append($1) }
            }
            #expect(replies.filter { $0.status == .ok }.count == 1, "\(replies.map { ($0.status.code, $0.errorCode) })")
            #expect(replies.allSatisfy { $0.status == .ok || (400..<500).contains($0.status.code) })
            let passkeys = try await harness.database.query(
                "SELECT count(*) FROM passkeys p JOIN accounts a ON a.account_id = p.account_id WHERE a.email = 'race@example.com'")
            for try await count in passkeys.decode(Int.self) { #expect(count == 1) }
        }
    }

    @Test("the passkey ceremonies refuse another origin and a body no JSON client sends; the session answer is never cached")
    func ceremoniesCheckOriginAndMediaType() async throws {
        try await AdminHarness.run { harness in
            let hostile = try await harness.client.execute(
                uri: "/dashboard/api/signin/options", method: .post, headers: [.origin: "https://evil.example", .contentType: "application/json"],
                body: ByteBuffer(string: "{}")
            ) { $0.status }
            #expect(hostile == .forbidden)
            let form = try await harness.client.execute(
                uri: "/dashboard/api/signin", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                body: ByteBuffer(string: "challenge=x")
            ) { $0.status }
            #expect(form == .unsupportedMediaType)
            _ = try await harness.createKey()
            let alice = try await harness.person("alice@example.com", in: Self.appA)
            let cache = try await harness.client.execute(
                uri: "/dashboard/api/session", method: .get, headers: [.cookie: "__Host-sesame_session=\(try #require(alice.sessionToken))"]
            ) { $0.headers[.cacheControl] }
            #expect(cache == "no-store")
        }
    }

    @Test("owners change roles and remove people, never the last owner; removed from their last app, a person's account is gone")
    func rolesAndRemoval() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            let alice = try await harness.person("alice@example.com", in: Self.appA)
            let bob = try await harness.person("bob@example.com", in: Self.appA, role: "editor")

            #expect(try await alice.call(.put, "/v1/admin/accounts/alice@example.com", ["role": "viewer"], app: Self.appA).errorCode == "last_owner")
            #expect(try await alice.call(.delete, "/v1/admin/accounts/alice@example.com", app: Self.appA).errorCode == "last_owner")
            #expect(try await bob.call(.put, "/v1/admin/accounts/bob@example.com", ["role": "owner"], app: Self.appA).errorCode == "role_too_low")
            #expect(try await harness.call(.delete, "/v1/admin/accounts/bob@example.com", credential: key).errorCode == "account_required")
            #expect(try await alice.call(.put, "/v1/admin/accounts/nobody@example.com", ["role": "viewer"], app: Self.appA).errorCode == "account_not_found")

            // Bob becomes owner; then Alice may step down.
            #expect(try await alice.call(.put, "/v1/admin/accounts/bob@example.com", ["role": "owner"], app: Self.appA).status == .ok)
            #expect(try await alice.call(.put, "/v1/admin/accounts/alice@example.com", ["role": "editor"], app: Self.appA).status == .ok)
            #expect(try await alice.call(.put, "/v1/admin/policy", ["admitUnattested": true], app: Self.appA).errorCode == "role_too_low")

            // Bob removes Alice, whose only app it was: her session and passkey are gone at once.
            #expect(try await bob.call(.delete, "/v1/admin/accounts/alice@example.com", app: Self.appA).status == .ok)
            #expect(try await alice.apps() == nil)
            #expect(try await alice.call(.get, "/v1/admin/config", app: Self.appA).errorCode == "session_expired")
            #expect(try await alice.signIn().errorCode == "passkey_unknown")
            // A new invitation starts her afresh, with a new passkey (the way back from a lost one).
            let again = DashboardPerson("alice@example.com", client: harness.client)
            #expect(try await again.register(invitation: try await harness.invitation("alice@example.com", to: Self.appA, role: "viewer")).status == .ok)
            #expect(try await again.apps() == [Self.appA])

            let audit = try await harness.call(.get, "/v1/admin/audit?limit=100", credential: key)
            let actions = (audit["entries"] as? [[String: Any]] ?? []).compactMap { $0["action"] as? String }
            #expect(actions.contains("account.role") && actions.contains("account.remove"), "\(actions)")
        }
    }

    @Test("a person adds a second passkey; an owner of all their apps lists and revokes it and ends their sessions; others may not")
    func passkeysAndSessions() async throws {
        try await AdminHarness.run { harness in
            _ = try await harness.createKey()
            _ = try await harness.createKey(bundleID: "com.example.other")
            let alice = try await harness.person("alice@example.com", in: Self.appA)
            let dave = try await harness.person("dave@example.com", in: Self.appA, role: "viewer")

            // Dave adds a second device while signed in; the first one is excluded from the options.
            let options = try await dave.call(.post, "/dashboard/api/passkeys/options", [:] as [String: String])
            let excluded = (options["excludeCredentials"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
            #expect(excluded == [dave.passkey.credentialIDText])
            let laptop = SoftwarePasskey()
            let added = try await dave.call(.post, "/dashboard/api/passkeys", laptop.registration(challenge: try #require(options["challenge"] as? String)))
            #expect(added.status == .ok, "\(added.json)")
            let own = try await dave.call(.get, "/dashboard/api/passkeys")["passkeys"] as? [[String: Any]]
            #expect(own?.count == 2)
            #expect((own?.first?["createdAt"] as? String)?.hasPrefix("20") == true, "dates in ISO 8601: \(own ?? [])")
            let laptopUser = DashboardPerson("dave@example.com", client: harness.client, passkey: laptop)
            #expect(try await laptopUser.signIn().status == .ok)

            // Alice, owner of Dave's only app, sees both and revokes the laptop's: Dave's sessions end.
            let listed = try await alice.call(.get, "/v1/admin/accounts/dave@example.com/passkeys", app: Self.appA)
            #expect((listed["passkeys"] as? [[String: Any]])?.compactMap { $0["credentialId"] as? String }.sorted()
                == [dave.passkey.credentialIDText, laptop.credentialIDText].sorted())
            #expect(try await dave.call(.get, "/v1/admin/accounts/alice@example.com/passkeys", app: Self.appA).errorCode == "role_too_low")
            let revoked = try await alice.call(.delete, "/v1/admin/accounts/dave@example.com/passkeys/\(laptop.credentialIDText)", app: Self.appA)
            #expect(revoked.status == .ok, "\(revoked.json)")
            #expect(try await dave.apps() == nil)
            #expect(try await laptopUser.apps() == nil)
            #expect(try await laptopUser.signIn().errorCode == "passkey_unknown")
            let last = try await alice.call(.delete, "/v1/admin/accounts/dave@example.com/passkeys/\(dave.passkey.credentialIDText)", app: Self.appA)
            #expect(last.errorCode == "last_passkey")
            #expect(try await dave.signIn().status == .ok)
            #expect(try await alice.call(.delete, "/v1/admin/accounts/dave@example.com/sessions", app: Self.appA).status == .ok)
            #expect(try await dave.apps() == nil)

            // Carol also works on B, which Alice does not own: her passkeys and sessions are not Alice's to touch.
            let carol = try await harness.person("carol@example.com", in: Self.appA, role: "editor")
            let toB = try await harness.invitation("carol@example.com", to: Self.appB)
            #expect(try await carol.call(.post, "/dashboard/api/invitation/accept", ["invitation": toB]).status == .ok)
            #expect(try await alice.call(.get, "/v1/admin/accounts/carol@example.com/passkeys", app: Self.appA).errorCode == "person_in_other_apps")
            #expect(try await alice.call(.delete, "/v1/admin/accounts/carol@example.com/sessions", app: Self.appA).errorCode == "person_in_other_apps")
            // Removing her from A is Alice's call, and leaves her B.
            #expect(try await alice.call(.delete, "/v1/admin/accounts/carol@example.com", app: Self.appA).status == .ok)
            #expect(try await carol.apps() == [Self.appB])
        }
    }
}
