import BenchmarkSupport
import DevSuite
import Foundation
import NIOHTTP1
import SesameConfiguration
import WebAuthnTesting

/// Admin killed with SIGKILL in the middle of its writes, round after round: config uploads to
/// four patterns, a 3 MiB blob upload, and a person accepting an invitation with a new passkey.
/// After each restart: every acknowledged upload is stored and published exactly as sent, and
/// delivery serves each pattern's newest revision; no blob is listed with bytes other than those
/// uploaded (a half-written one is never visible); an invitation is spent exactly when its
/// account, passkey and role exist, and the person can join or sign in; the audit chain is intact;
/// admin is ready again with nothing fixed by hand.
struct AdminCrash {
    let suite: DevelopmentSuite
    let gateway: String
    let operatorToken: String
    let rounds: Int

    static let teamID = "CRASHTEAM1"
    static let bundleID = "com.example.crash"
    static let patterns = ["*", "1.*", "2.*", "2.1.*"]

    /// What the writers sent and what admin acknowledged.
    actor Ledger {
        /// Per pattern: acknowledged revisions and the SHA-256 of the config each carried.
        var acknowledged: [String: [(revision: Int, digest: String)]] = [:]
        /// Every config body sent (acknowledged or not), by digest: a stored revision must be one of them.
        var sent: Set<String> = []
        /// Blob key → the SHA-256 of the bytes uploaded under it.
        var blobs: [String: String] = [:]
        var attempts = 0
        var acknowledgements = 0

        func send(_ digest: String) { sent.insert(digest); attempts += 1 }
        func acknowledge(_ pattern: String, _ revision: Int, _ digest: String) {
            acknowledged[pattern, default: []].append((revision, digest))
            acknowledgements += 1
        }
        func blob(_ key: String, _ digest: String) { blobs[key] = digest }
    }

    /// Runs the rounds; what was tried and what held, a line each.
    func run() async throws -> [String] {
        let created = try await HTTP.post("\(gateway)/v1/admin/keys/create", json: ["teamId": Self.teamID, "bundleId": Self.bundleID],
            headers: ["Authorization": "Bearer \(operatorToken)"])
        guard let key = created.json?["key"] as? String else { throw BenchmarkFailure("keys/create: \(created.status) \(created.bodyText)") }
        // One debug device per version checked (a token is bound to its app version).
        var devices: [String: String] = [:]
        for version in Self.probes.map(\.version) { devices[version] = try await debugDevice(gateway: gateway, key: key, version: version) }
        let ledger = Ledger()
        var restarts: [Double] = []
        var held = ["stored as sent": 0, "served by delivery": 0, "blobs whole": 0, "invitations all or nothing": 0, "audit chain intact": 0]
        var joins = (acknowledged: 0, cutOffButJoined: 0, joinedAfterRestart: 0)
        let clock = ContinuousClock()
        CrashSupport.say("crash: admin, \(rounds) rounds; each writes configs and a blob to admin, kills it (SIGKILL) 20–400 ms in, restarts it, checks")
        for round in 1...rounds {
            let person = try await invite(round: round)
            // Writers: uploads to every pattern, and a 3 MiB blob, as fast as admin takes them; a person joins.
            let joining = Task { await join(person, after: .milliseconds(Int.random(in: 0...300))) }
            let writers = Task {
                await withTaskGroup(of: Void.self) { group in
                    for pattern in Self.patterns {
                        group.addTask { await upload(gateway: gateway, key: key, pattern: pattern, round: round, ledger: ledger) }
                    }
                    group.addTask { await putBlob(gateway: gateway, key: key, round: round, ledger: ledger) }
                }
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 20...400)))
            try await CrashSupport.kill("admin", of: suite)
            await writers.value
            let joined = await joining.value
            let restarted = clock.now
            try await suite.up()
            try await CrashSupport.eventually(timeout: .seconds(60), "admin ready after the kill") {
                (try? await HTTP.get("\(gateway)/v1/admin/config", headers: ["Authorization": "Bearer \(key)"]))?.status == 200
            }
            restarts.append((clock.now - restarted).inSeconds)
            try await check(gateway: gateway, key: key, devices: devices, ledger: ledger, round: round, held: &held)
            switch try await checkInvitation(person, acknowledged: joined, round: round) {
            case .acknowledged: joins.acknowledged += 1
            case .committedUnanswered: joins.cutOffButJoined += 1
            case .rolledBack: joins.joinedAfterRestart += 1
            }
            held["invitations all or nothing", default: 0] += 1
            if round % 10 == 0 { CrashSupport.say("crash: admin round \(round): held so far \(held.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))") }
        }
        let attempts = await ledger.attempts, acknowledged = await ledger.acknowledgements
        return [
            "admin: \(rounds) kills during writes; \(attempts) uploads sent, \(acknowledged) acknowledged, \(attempts - acknowledged) cut off",
            "admin: invitations: \(joins.acknowledged) accepted before the kill, \(joins.cutOffButJoined) cut off after committing, \(joins.joinedAfterRestart) cut off before committing and accepted after the restart",
            "admin: invariants held after every kill: \(held.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)/\(rounds)" }.joined(separator: ", "))",
            "admin: ready again after a kill in \(CrashSupport.medianAndWorst(restarts)); nothing fixed by hand",
        ]
    }

    func upload(gateway: String, key: String, pattern: String, round: Int, ledger: Ledger) async {
        for attempt in 0..<50 {
            let config: [String: Any] = ["round": round, "attempt": attempt, "pattern": pattern, "payload": String(repeating: "x", count: 512)]
            let digest = CrashSupport.digest(CrashSupport.canonical(config))
            await ledger.send(digest)
            guard let reply = try? await HTTP.post(
                "\(gateway)/v1/admin/config/upload", json: ["version": pattern, "config": config, "tiers": ["round": "debug", "attempt": "debug", "pattern": "debug", "payload": "debug"]],
                headers: ["Authorization": "Bearer \(key)"]), reply.status == 200, let revision = reply.json?["revision"] as? Int
            else { return }  // admin is gone: this round's writes end
            await ledger.acknowledge(pattern, revision, digest)
        }
    }

    func putBlob(gateway: String, key: String, round: Int, ledger: Ledger) async {
        let bytes = (0..<(3 << 20)).map { _ in UInt8.random(in: 0...255) }
        let blobKey = "crash-\(round % 5)"
        guard let reply = try? await HTTP.send(
            "\(gateway)/v1/admin/blob/\(blobKey)", method: .PUT, headers: ["Authorization": "Bearer \(key)", "Content-Type": "application/octet-stream"],
            body: bytes), reply.status == 200
        else { return }
        await ledger.blob(blobKey, CrashSupport.digest(bytes))
    }

    // MARK: Invitations

    /// A person invited to the app in round `round`, with the passkey they will join with.
    struct Invited: Sendable {
        let email: String
        let token: String
        var passkey: SoftwarePasskey
    }

    /// What became of an invitation whose acceptance raced the kill.
    enum InvitationOutcome { case acknowledged, committedUnanswered, rolledBack }

    var dashboardOrigin: String { "http://localhost:\(suite.layout.gatewayPort)" }

    func invite(round: Int) async throws -> Invited {
        let email = "crash-\(round)-\(UInt32.random(in: 0...UInt32.max))@example.com"
        let invited = try await HTTP.post(
            "\(gateway)/v1/admin/accounts/invite",
            json: ["email": email, "role": "viewer", "teamId": Self.teamID, "bundleId": Self.bundleID],
            headers: ["Authorization": "Bearer \(operatorToken)"])
        guard let link = invited.json?["inviteURL"] as? String, let token = link.split(separator: "#invite=").last else {
            throw BenchmarkFailure("invite: \(invited.status) \(invited.bodyText)")
        }
        return Invited(email: email, token: String(token), passkey: SoftwarePasskey(origin: dashboardOrigin))
    }

    /// Registers the person's passkey with the invitation, as the dashboard's page does; whether
    /// admin acknowledged it.
    func join(_ person: Invited, after delay: Duration = .zero) async -> Bool {
        try? await Task.sleep(for: delay)
        let headers = ["Origin": dashboardOrigin]
        guard let options = try? await HTTP.post("\(gateway)/dashboard/api/register/options", json: ["invitation": person.token], headers: headers),
            let challenge = options.json?["challenge"] as? String
        else { return false }
        var fields: [String: Any] = person.passkey.registration(challenge: challenge)
        fields["invitation"] = person.token
        return (try? await HTTP.post("\(gateway)/dashboard/api/register", json: fields, headers: headers))?.status == 200
    }

    /// The invitation is spent exactly when the account, its passkey and its role exist (and is
    /// when admin acknowledged it); a person cut off before it committed can still join; a person
    /// who joined signs in with their passkey.
    func checkInvitation(_ person: Invited, acknowledged: Bool, round: Int) async throws -> InvitationOutcome {
        let state = try await Psql.rows(suite.layout.databaseURL, """
            SELECT i.used_at IS NOT NULL, EXISTS (
                SELECT 1 FROM accounts a JOIN passkeys p ON p.account_id = a.account_id
                JOIN account_roles r ON r.account_id = a.account_id AND r.app_id = i.app_id WHERE a.email = i.email)
            FROM account_invitations i WHERE i.email = '\(person.email)'
            """)
        let outcome: InvitationOutcome
        switch (state.first, acknowledged) {
        case (["t", "t"], true): outcome = .acknowledged
        case (["t", "t"], false): outcome = .committedUnanswered
        case (["f", "f"], false):
            outcome = .rolledBack
            guard await join(person) else { throw BenchmarkFailure("round \(round): an invitation cut off before it committed could not be accepted after the restart") }
        default:
            throw BenchmarkFailure("round \(round): invitation (spent, account with passkey and role) is \(state.first ?? []) after \(acknowledged ? "an acknowledged" : "a cut-off") acceptance")
        }
        var passkey = person.passkey
        let headers = ["Origin": dashboardOrigin]
        let options = try await HTTP.post("\(gateway)/dashboard/api/signin/options", json: [:], headers: headers)
        guard let challenge = options.json?["challenge"] as? String else { throw BenchmarkFailure("signin/options: \(options.status)") }
        let signedIn = try await HTTP.post("\(gateway)/dashboard/api/signin", json: try passkey.assertion(challenge: challenge), headers: headers)
        guard signedIn.status == 200 else { throw BenchmarkFailure("round \(round): \(person.email) joined but cannot sign in: \(signedIn.status) \(signedIn.bodyText)") }
        return outcome
    }

    /// The version each pattern is checked through, most specific pattern first.
    static let probes = [(version: "2.1.3", pattern: "2.1.*"), (version: "2.0.0", pattern: "2.*"), (version: "1.0.0", pattern: "1.*"), (version: "3.0.0", pattern: "*")]

    func check(gateway: String, key: String, devices: [String: String], ledger: Ledger, round: Int, held: inout [String: Int]) async throws {
        let auth = ["Authorization": "Bearer \(key)"]
        // 1. Every acknowledged revision is stored exactly as sent; every stored one is one that was sent.
        let sent = await ledger.sent
        for (pattern, revisions) in await ledger.acknowledged {
            for (revision, digest) in revisions.suffix(3) {
                let reply = try await CrashSupport.get("\(gateway)/v1/admin/config/body?version=\(pattern.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? pattern)&revision=\(revision)", headers: auth)
                guard reply.status == 200, let config = reply.json?["config"] else {
                    throw BenchmarkFailure("round \(round): acknowledged revision \(revision) of \(pattern) is gone (\(reply.status))")
                }
                guard CrashSupport.digest(CrashSupport.canonical(config)) == digest else { throw BenchmarkFailure("round \(round): revision \(revision) of \(pattern) is not what was sent") }
            }
            let live = try await CrashSupport.get("\(gateway)/v1/admin/config/body?version=\(pattern.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? pattern)", headers: auth)
            guard let config = live.json?["config"], sent.contains(CrashSupport.digest(CrashSupport.canonical(config))) else {
                throw BenchmarkFailure("round \(round): the published config of \(pattern) is not one that was sent")
            }
        }
        held["stored as sent", default: 0] += 1

        // 2. Delivery serves each pattern's newest revision (it learns of the last ones within the resync interval).
        let manifest = try await CrashSupport.get("\(gateway)/v1/admin/config", headers: auth)
        let live = Dictionary(uniqueKeysWithValues: ((manifest.json?["patterns"] as? [[String: Any]]) ?? []).compactMap { entry -> (String, Int)? in
            guard let pattern = entry["pattern"] as? String, let revision = entry["revision"] as? Int else { return nil }
            return (pattern, revision)
        })
        for (version, pattern) in Self.probes {
            guard let revision = live[pattern], let device = devices[version] else { continue }
            try await CrashSupport.eventually(timeout: .seconds(30), "round \(round): delivery serves revision \(revision) of \(pattern)") {
                let served = try await CrashSupport.get("\(gateway)/v1/config?version=\(version)", headers: ["Authorization": "Bearer \(device)"])
                return served.json?["revision"] as? Int == revision && served.json?["matchedPattern"] as? String == pattern
            }
        }
        held["served by delivery", default: 0] += 1

        // 3. A blob is listed only with the bytes that were uploaded under its key.
        let blobs = await ledger.blobs
        let listed = try await CrashSupport.get("\(gateway)/v1/admin/blob", headers: auth)
        for entry in (listed.json?["blobs"] as? [[String: Any]]) ?? [] {
            guard let name = entry["blobKey"] as? String, let digest = entry["sha256"] as? String else { continue }
            if let expected = blobs[name], expected != digest.lowercased() {
                // A newer upload under the same key may have committed without its acknowledgement: it must then be whole (3 MiB).
                guard entry["sizeBytes"] as? Int == 3 << 20 else {
                    throw BenchmarkFailure("round \(round): blob \(name) is listed with bytes that were never uploaded whole")
                }
            }
        }
        held["blobs whole", default: 0] += 1

        // 4. The audit chain holds across the kills.
        let verdict = try await CrashSupport.get("\(gateway)/v1/admin/audit/verify", headers: auth)
        guard verdict.json?["intact"] as? Bool == true else { throw BenchmarkFailure("round \(round): \(verdict.bodyText)") }
        held["audit chain intact", default: 0] += 1
    }

    /// A debug token exchanged for an access token: a device that reads every key opened to `debug`.
    func debugDevice(gateway: String, key: String, version: String) async throws -> String {
        let token = try await HTTP.post(
            "\(gateway)/v1/admin/debug-tokens", json: ["name": "crash-\(version)", "ttl": "24h"], headers: ["Authorization": "Bearer \(key)"])
        guard let debugToken = token.json?["debugToken"] as? String else { throw BenchmarkFailure("debug token: \(token.bodyText)") }
        let exchanged = try await HTTP.post("\(gateway)/v1/auth/debug", json: [
            "debugToken": debugToken, "teamId": Self.teamID, "bundleId": Self.bundleID, "appVersion": version,
        ])
        guard let access = exchanged.json?["accessToken"] as? String else { throw BenchmarkFailure("debug exchange: \(exchanged.bodyText)") }
        return access
    }
}
