import AppAttestTesting
import BenchmarkSupport
import Crypto
import DevSuite
import Foundation
import SesameConfiguration
import Synchronization

/// Auth killed with SIGKILL in the middle of its writes, round after round: installs refreshing
/// with assertions as fast as auth takes them (a challenge spent, the key's counter advanced, the
/// refresh family rotated), and in every other round the signing key rotated at the same time by
/// `sesame-auth rotate-signing-key --now`, killed with auth. After each restart: exactly one key
/// signs; tokens signed before the kill still verify at delivery, and tokens signed after it do;
/// every refresh family is at the generation its install was last given, or one past it when a
/// refresh was cut off, and never has two live tokens (the newer one works once, the older one is
/// refused as a reuse and takes the family with it); auth is ready again with nothing fixed by hand.
struct AuthCrash {
    let suite: DevelopmentSuite
    let gateway: String
    let operatorToken: String
    let attester: SoftwareAttester
    let rounds: Int

    static let teamID = "CRASHTEAM1"
    static let bundleID = "com.example.crash.auth"
    static let appVersion = "1.0.0"
    static let installs = 8
    var appID: String { "\(Self.teamID).\(Self.bundleID)" }

    /// One install: its attested key, the assertion counter it last used, the tokens it was last given.
    struct Install: Sendable {
        let key: SoftwareAttester.DeviceKey
        var counter: UInt32 = 0
        var accessToken: String
        var refreshToken: String
        /// A refresh was sent and not answered: the family may have moved one generation on.
        var cutOff = false
        var refreshes = 0
    }

    func run() async throws -> [String] {
        let created = try await HTTP.post("\(gateway)/v1/admin/keys/create", json: ["teamId": Self.teamID, "bundleId": Self.bundleID],
            headers: ["Authorization": "Bearer \(operatorToken)"])
        guard let key = created.json?["key"] as? String else { throw BenchmarkFailure("keys/create: \(created.status) \(created.bodyText)") }
        let uploaded = try await HTTP.post("\(gateway)/v1/admin/config/upload", json: ["version": "*", "config": ["greeting": "hello"]],
            headers: ["Authorization": "Bearer \(key)"])
        guard uploaded.status == 200 else { throw BenchmarkFailure("config upload: \(uploaded.status) \(uploaded.bodyText)") }

        var installs: [Install] = []
        for _ in 0..<Self.installs { installs.append(try await attest()) }
        var held = ["one key signs": 0, "old tokens verify": 0, "new tokens verify": 0, "one live token per family": 0]
        var restarts: [Double] = []
        var refreshes = 0, cutOff = 0, committedUnanswered = 0
        var rotations: [String: Int] = [:]
        // Rotation rounds kill within twice the last finished rotation's length (a guess at first),
        // so some rotations are cut and some finish.
        var rotationWindow = 600
        let clock = ContinuousClock()
        CrashSupport.say("crash: auth, \(rounds) rounds; \(Self.installs) installs refresh with assertions, every other round the signing key rotates and both are killed (SIGKILL) at a random moment of the rotation, else auth 20–400 ms in; restarted, checked")
        for round in 1...rounds {
            let current = installs
            let writers = Task {
                await withTaskGroup(of: Install.self) { group in
                    for install in current { group.addTask { await refreshUntilCut(install) } }
                    return await group.reduce(into: []) { $0.append($1) }
                }
            }
            if round.isMultiple(of: 2) {
                // The signing key rotates too, and both are killed at a random moment of the rotation.
                let started = Mutex(false)
                let rotator = Task { await rotateSigningKey { started.withLock { $0 = true } } }
                // Polled closely: a rotation lasts a fraction of a second.
                while !started.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(1)) }
                try await Task.sleep(for: .milliseconds(Int.random(in: 0...rotationWindow)))
                rotator.cancel()
                try await CrashSupport.kill("auth", of: suite)
                let race = await rotator.value
                if case .finished(let took) = race { rotationWindow = max(2, Int(took.inSeconds * 2000)) }
                if case .failed(let output) = race { throw BenchmarkFailure("round \(round): rotate-signing-key failed: \(output)") }
                rotations[race.name, default: 0] += 1
            } else {
                try await Task.sleep(for: .milliseconds(Int.random(in: 20...400)))
                try await CrashSupport.kill("auth", of: suite)
            }
            installs = await writers.value
            let restarted = clock.now
            try await suite.up()
            try await CrashSupport.eventually(timeout: .seconds(60), "auth ready after the kill") {
                (try? await HTTP.post("\(gateway)/v1/auth/challenge", json: [:]))?.status == 200
            }
            restarts.append((clock.now - restarted).inSeconds)
            refreshes += installs.map(\.refreshes).reduce(0, +)
            cutOff += installs.filter(\.cutOff).count
            installs = try await check(installs, round: round, held: &held, committedUnanswered: &committedUnanswered)
            if round % 10 == 0 {
                CrashSupport.say("crash: auth round \(round): held so far \(held.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
            }
        }
        return [
            "auth: \(rounds) kills during writes; \(refreshes) refreshes acknowledged, \(cutOff) cut off (\(committedUnanswered) of them committed unanswered), signing-key rotations raced in \(rounds / 2) rounds: \(rotations["finished", default: 0]) finished before the kill, \(rotations["killed", default: 0]) killed with auth",
            "auth: invariants held after every kill: \(held.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)/\(rounds)" }.joined(separator: ", "))",
            "auth: ready again after a kill in \(CrashSupport.medianAndWorst(restarts)); nothing fixed by hand",
        ]
    }

    // MARK: The writes

    /// Refreshes `install` with assertions until auth stops answering; what it was last given.
    func refreshUntilCut(_ install: Install) async -> Install {
        var install = install
        install.refreshes = 0
        while true {
            guard let body = try? await assertedRefresh(&install) else { return install }
            install.cutOff = true
            guard let reply = try? await HTTP.post("\(gateway)/v1/auth/refresh", json: body) else { return install }
            guard reply.status == 200, let access = reply.json?["accessToken"] as? String, let refresh = reply.json?["refreshToken"] as? String
            else {
                // 502 from the gateway once auth is gone; anything else was refused while it ran, which the check reports.
                return install
            }
            install.accessToken = access
            install.refreshToken = refresh
            install.cutOff = false
            install.refreshes += 1
        }
    }

    /// How a raced signing-key rotation ended.
    enum RotationRace {
        case finished(Duration), killed
        /// It ended by itself, refused: what it printed.
        case failed(String)

        var name: String {
            switch self {
            case .finished: "finished"
            case .killed: "killed"
            case .failed: "failed"
            }
        }
    }

    /// `sesame-auth rotate-signing-key --now`, killed with SIGKILL when the task is cancelled
    /// while it runs; `started` is called once its process runs.
    func rotateSigningKey(started: @escaping @Sendable () -> Void) async -> RotationRace {
        let pid = Mutex<pid_t?>(nil)
        let clock = ContinuousClock()
        let begun = clock.now
        let result = await withTaskCancellationHandler {
            try? await suite.run(.auth, ["rotate-signing-key", "--now"], capture: true) { running in
                pid.withLock { $0 = running }
                started()
            }
        } onCancel: {
            if let running = pid.withLock({ $0 }) { kill(running, SIGKILL) }
        }
        switch result?.status {
        case 0: return .finished(clock.now - begun)
        case 128 + SIGKILL: return .killed
        default: return .failed(result?.output ?? "it could not be started")
        }
    }

    // MARK: The checks

    func check(_ installs: [Install], round: Int, held: inout [String: Int], committedUnanswered: inout Int) async throws -> [Install] {
        // 1. Exactly one key signs now, and at most one waits to.
        let keys = try await Psql.rows(suite.layout.databaseURL, """
            SELECT count(*) FILTER (WHERE activates_at <= now() AND (retired_at IS NULL OR retired_at > now())),
                   count(*) FILTER (WHERE activates_at > now()) FROM signing_keys
            """)
        guard keys.first == ["1", "0"] || keys.first == ["1", "1"] else {
            throw BenchmarkFailure("round \(round): signing keys (signing now, waiting) are \(keys.first ?? [])")
        }
        held["one key signs", default: 0] += 1

        // 2. Every access token given before the kill still verifies at delivery.
        for install in installs {
            try await CrashSupport.eventually(timeout: .seconds(15), "round \(round): an access token given before the kill verifies") {
                try await config(with: install.accessToken) == 200
            }
        }
        held["old tokens verify", default: 0] += 1

        // 3. Each family is where its install was left, and has one live token.
        var next: [Install] = []
        for var install in installs {
            let (family, generation) = try Self.familyClaim(install.refreshToken)
            let rows = try await Psql.rows(
                suite.layout.databaseURL, "SELECT generation, revoked_at IS NOT NULL FROM refresh_token_families WHERE family_id = '\(family)'")
            guard let row = rows.first, row.count == 2, let stored = Int64(row[0]) else {
                throw BenchmarkFailure("round \(round): family \(family) is gone")
            }
            guard row[1] == "f" else { throw BenchmarkFailure("round \(round): family \(family) was revoked though only its current token was used") }
            let given = try await refresh(&install)
            switch stored {
            case generation:
                // The newest token the install holds works, once; the one before it is then a reuse, and the family ends.
                guard given.status == 200, let newer = given.json?["refreshToken"] as? String else {
                    throw BenchmarkFailure("round \(round): the current refresh token of family \(family) was refused: \(given.status) \(given.bodyText)")
                }
                try await refusedAsReuse(install.refreshToken, &install, round: round, family: family)
                install.refreshToken = newer
                let afterReuse = try await refresh(&install)
                guard afterReuse.status == 401 else {
                    throw BenchmarkFailure("round \(round): family \(family) has two live tokens: after a reuse its newest answered \(afterReuse.status)")
                }
            case generation + 1 where install.cutOff:
                // The cut-off refresh committed: the token the install holds is now a reuse.
                committedUnanswered += 1
                guard given.status == 401, given.bodyText.contains("refresh_token_reused") else {
                    throw BenchmarkFailure("round \(round): family \(family) has two live tokens: generation \(generation) answered \(given.status) at \(stored)")
                }
            default:
                throw BenchmarkFailure("round \(round): family \(family) is at generation \(stored); its install was given \(generation)\(install.cutOff ? " and cut off" : "")")
            }
            let revoked = try await Psql.rows(
                suite.layout.databaseURL, "SELECT revoked_at IS NOT NULL FROM refresh_token_families WHERE family_id = '\(family)'")
            guard revoked.first == ["t"] else { throw BenchmarkFailure("round \(round): a reused family \(family) was not revoked") }
            next.append(try await attest())
        }
        held["one live token per family", default: 0] += 1

        // 4. Tokens signed after the restart (by whichever key won) verify at delivery.
        for install in next {
            try await CrashSupport.eventually(timeout: .seconds(15), "round \(round): an access token given after the restart verifies") {
                try await config(with: install.accessToken) == 200
            }
        }
        held["new tokens verify", default: 0] += 1
        return next
    }

    private func refusedAsReuse(_ token: String, _ install: inout Install, round: Int, family: String) async throws {
        install.refreshToken = token
        let reply = try await refresh(&install)
        guard reply.status == 401, reply.bodyText.contains("refresh_token_reused") else {
            throw BenchmarkFailure("round \(round): family \(family) has two live tokens: the superseded one answered \(reply.status) \(reply.bodyText)")
        }
    }

    // MARK: An install's calls

    /// A fresh key attested: a new install.
    func attest() async throws -> Install {
        let nonce = try await challenge()
        guard let nonceBytes = Data(base64Encoded: nonce) else { throw BenchmarkFailure("the nonce is not base64") }
        let key = attester.generateKey()
        let attestation = try attester.attest(key, clientDataHash: Array(SHA256.hash(data: nonceBytes)), appId: appID)
        let reply = try await HTTP.post("\(gateway)/v1/auth/attest", json: [
            "attestationObject": Data(attestation).base64EncodedString(), "keyId": Data(key.keyId).base64EncodedString(),
            "nonce": nonce, "teamId": Self.teamID, "bundleId": Self.bundleID, "appVersion": Self.appVersion,
        ])
        guard reply.status == 200, let access = reply.json?["accessToken"] as? String, let refresh = reply.json?["refreshToken"] as? String else {
            throw BenchmarkFailure("attest: \(reply.status) \(reply.bodyText)")
        }
        return Install(key: key, accessToken: access, refreshToken: refresh)
    }

    func challenge() async throws -> String {
        let reply = try await HTTP.post("\(gateway)/v1/auth/challenge", json: [:])
        guard reply.status == 200, let nonce = reply.json?["nonce"] as? String else { throw BenchmarkFailure("challenge: \(reply.status)") }
        return nonce
    }

    /// A refresh body for the install's refresh token, asserted by its key over a fresh challenge.
    func assertedRefresh(_ install: inout Install) async throws -> [String: Any] {
        let clientData = try JSONSerialization.data(withJSONObject: ["challenge": try await challenge()])
        install.counter += 1
        let assertion = try attester.assert(install.key, clientDataHash: Array(SHA256.hash(data: clientData)), appId: appID, counter: install.counter)
        return ["refreshToken": install.refreshToken, "assertion": Data(assertion).base64EncodedString(), "clientData": clientData.base64EncodedString()]
    }

    /// One asserted refresh of the install's refresh token, answered.
    func refresh(_ install: inout Install) async throws -> HTTP.Reply {
        try await HTTP.post("\(gateway)/v1/auth/refresh", json: try await assertedRefresh(&install))
    }

    /// `GET /v1/config` with an access token: the status delivery answered.
    func config(with accessToken: String) async throws -> Int {
        try await CrashSupport.get("\(gateway)/v1/config?version=\(Self.appVersion)", headers: ["Authorization": "Bearer \(accessToken)"]).status
    }

    /// The family and generation a refresh token carries (its payload, read without verifying).
    static func familyClaim(_ token: String) throws -> (family: String, generation: Int64) {
        let parts = token.split(separator: ".")
        guard parts.count == 3 else { throw BenchmarkFailure("a refresh token is not a JWT") }
        var payload = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        payload += String(repeating: "=", count: (4 - payload.count % 4) % 4)
        guard let data = Data(base64Encoded: payload), let claims = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let family = claims["fam"] as? String, let generation = claims["gen"] as? Int
        else { throw BenchmarkFailure("a refresh token without fam and gen") }
        return (family.lowercased(), Int64(generation))
    }
}
