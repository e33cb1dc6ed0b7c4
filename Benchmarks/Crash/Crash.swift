import ArgumentParser
import BenchmarkSupport
import Crypto
import DevSuite
import Foundation
import NIOHTTP1
import SesameConfiguration

/// `./sesame-dev crash`: kills admin with SIGKILL in the middle of its writes, round after round,
/// and checks after each restart what must hold: every acknowledged upload is stored and published
/// exactly as sent, and delivery serves each pattern's newest revision; no blob is listed with
/// bytes other than those uploaded (a half-written one is never visible); the audit chain is
/// intact; admin is ready again with nothing fixed by hand. Prints what it tried and what held.
@main
struct Crash: AsyncParsableCommand {
    @Option(help: "A folder for this run's files.") var work: String
    @Option(help: "Rounds: each starts writes, kills admin at a random moment, restarts it and checks.") var rounds = 100

    static let patterns = ["*", "1.*", "2.*", "2.1.*"]

    func run() async throws {
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let operatorToken = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let suite = DevelopmentSuite(layout: try SuiteLayout.fromEnvironment(), extraEnvironment: [
            "SESAME_OPERATOR_TOKEN": operatorToken, "SESAME_LOG_LEVEL": "warning", "SESAME_DELIVERY_RESYNC_INTERVAL": "5s",
            "SESAME_REQUEST_RATE_PER_CLIENT": "100000", "SESAME_REQUEST_RATE_PER_KEY": "100000",
        ])
        try await suite.up()
        var failure: (any Error)?
        do {
            try await drive(suite: suite, operatorToken: operatorToken)
        } catch {
            failure = error
        }
        try? await suite.down()
        if let failure { throw failure }
    }

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

    func drive(suite: DevelopmentSuite, operatorToken: String) async throws {
        let gateway = "http://127.0.0.1:\(suite.layout.gatewayPort)"
        let created = try await HTTP.post("\(gateway)/v1/admin/keys/create", json: ["teamId": "CRASHTEAM1", "bundleId": "com.example.crash"],
            headers: ["Authorization": "Bearer \(operatorToken)"])
        guard let key = created.json?["key"] as? String else { throw BenchmarkFailure("keys/create: \(created.status) \(created.bodyText)") }
        // One debug device per version checked (a token is bound to its app version).
        var devices: [String: String] = [:]
        for version in Self.probes.map(\.version) { devices[version] = try await debugDevice(gateway: gateway, key: key, version: version) }
        let ledger = Ledger()
        let pids = URL(fileURLWithPath: suite.layout.pids, isDirectory: true).appendingPathComponent("admin.pid")
        var restarts: [Double] = []
        var held = ["stored as sent": 0, "served by delivery": 0, "blobs whole": 0, "audit chain intact": 0]
        let clock = ContinuousClock()
        Self.say("crash: \(rounds) rounds; each writes configs and a blob to admin, kills it (SIGKILL) 20–400 ms in, restarts it, checks")
        for round in 1...rounds {
            // Writers: uploads to every pattern, and a 3 MiB blob, as fast as admin takes them.
            let writers = Task {
                await withTaskGroup(of: Void.self) { group in
                    for pattern in Self.patterns {
                        group.addTask { await upload(gateway: gateway, key: key, pattern: pattern, round: round, ledger: ledger) }
                    }
                    group.addTask { await putBlob(gateway: gateway, key: key, round: round, ledger: ledger) }
                }
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 20...400)))
            let pidText = (try? String(contentsOf: pids, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            guard let pid = pidText.flatMap({ Int32($0) }) else { throw BenchmarkFailure("round \(round): no admin pid") }
            kill(pid, SIGKILL)
            await writers.value
            let restarted = clock.now
            try await suite.up()
            try await Self.eventually(timeout: .seconds(60), "admin ready after the kill") {
                (try? await HTTP.get("\(gateway)/v1/admin/config", headers: ["Authorization": "Bearer \(key)"]))?.status == 200
            }
            restarts.append((clock.now - restarted).inSeconds)
            try await check(gateway: gateway, key: key, devices: devices, ledger: ledger, round: round, held: &held)
            if round % 10 == 0 { Self.say("crash: round \(round): held so far \(held.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))") }
        }
        let attempts = await ledger.attempts, acknowledged = await ledger.acknowledgements
        let sorted = restarts.sorted()
        Self.say("""
            crash: \(rounds) kills of admin during writes; \(attempts) uploads sent, \(acknowledged) acknowledged, \(attempts - acknowledged) cut off
            crash: invariants held after every kill: \(held.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)/\(rounds)" }.joined(separator: ", "))
            crash: admin ready again after a kill in \(String(format: "%.2f", sorted[sorted.count / 2])) s (median), \(String(format: "%.2f", sorted.last ?? 0)) s (worst); nothing fixed by hand
            """)
    }

    func upload(gateway: String, key: String, pattern: String, round: Int, ledger: Ledger) async {
        for attempt in 0..<50 {
            let config: [String: Any] = ["round": round, "attempt": attempt, "pattern": pattern, "payload": String(repeating: "x", count: 512)]
            let digest = Self.digest(canonical(config))
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
        await ledger.blob(blobKey, Self.digest(bytes))
    }

    /// The version each pattern is checked through, most specific pattern first.
    static let probes = [(version: "2.1.3", pattern: "2.1.*"), (version: "2.0.0", pattern: "2.*"), (version: "1.0.0", pattern: "1.*"), (version: "3.0.0", pattern: "*")]

    func check(gateway: String, key: String, devices: [String: String], ledger: Ledger, round: Int, held: inout [String: Int]) async throws {
        let auth = ["Authorization": "Bearer \(key)"]
        // 1. Every acknowledged revision is stored exactly as sent; every stored one is one that was sent.
        let sent = await ledger.sent
        for (pattern, revisions) in await ledger.acknowledged {
            for (revision, digest) in revisions.suffix(3) {
                let reply = try await Self.get("\(gateway)/v1/admin/config/body?version=\(pattern.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? pattern)&revision=\(revision)", headers: auth)
                guard reply.status == 200, let config = reply.json?["config"] else {
                    throw BenchmarkFailure("round \(round): acknowledged revision \(revision) of \(pattern) is gone (\(reply.status))")
                }
                guard Self.digest(canonical(config)) == digest else { throw BenchmarkFailure("round \(round): revision \(revision) of \(pattern) is not what was sent") }
            }
            let live = try await Self.get("\(gateway)/v1/admin/config/body?version=\(pattern.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? pattern)", headers: auth)
            guard let config = live.json?["config"], sent.contains(Self.digest(canonical(config))) else {
                throw BenchmarkFailure("round \(round): the published config of \(pattern) is not one that was sent")
            }
        }
        held["stored as sent", default: 0] += 1

        // 2. Delivery serves each pattern's newest revision (it learns of the last ones within the resync interval).
        let manifest = try await Self.get("\(gateway)/v1/admin/config", headers: auth)
        let live = Dictionary(uniqueKeysWithValues: ((manifest.json?["patterns"] as? [[String: Any]]) ?? []).compactMap { entry -> (String, Int)? in
            guard let pattern = entry["pattern"] as? String, let revision = entry["revision"] as? Int else { return nil }
            return (pattern, revision)
        })
        for (version, pattern) in Self.probes {
            guard let revision = live[pattern], let device = devices[version] else { continue }
            try await Self.eventually(timeout: .seconds(30), "round \(round): delivery serves revision \(revision) of \(pattern)") {
                let served = try await Self.get("\(gateway)/v1/config?version=\(version)", headers: ["Authorization": "Bearer \(device)"])
                return served.json?["revision"] as? Int == revision && served.json?["matchedPattern"] as? String == pattern
            }
        }
        held["served by delivery", default: 0] += 1

        // 3. A blob is listed only with the bytes that were uploaded under its key.
        let blobs = await ledger.blobs
        let listed = try await Self.get("\(gateway)/v1/admin/blob", headers: auth)
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
        let verdict = try await Self.get("\(gateway)/v1/admin/audit/verify", headers: auth)
        guard verdict.json?["intact"] as? Bool == true else { throw BenchmarkFailure("round \(round): \(verdict.bodyText)") }
        held["audit chain intact", default: 0] += 1
    }

    /// A debug token exchanged for an access token: a device that reads every key opened to `debug`.
    func debugDevice(gateway: String, key: String, version: String) async throws -> String {
        let token = try await HTTP.post(
            "\(gateway)/v1/admin/debug-tokens", json: ["name": "crash-\(version)", "ttl": "24h"], headers: ["Authorization": "Bearer \(key)"])
        guard let debugToken = token.json?["debugToken"] as? String else { throw BenchmarkFailure("debug token: \(token.bodyText)") }
        let exchanged = try await HTTP.post("\(gateway)/v1/auth/debug", json: [
            "debugToken": debugToken, "teamId": "CRASHTEAM1", "bundleId": "com.example.crash", "appVersion": version,
        ])
        guard let access = exchanged.json?["accessToken"] as? String else { throw BenchmarkFailure("debug exchange: \(exchanged.bodyText)") }
        return access
    }

    /// A GET that tries again on a transport error (a pooled connection the gateway closed while
    /// admin restarted); an answer, whatever its status, is returned as it is.
    static func get(_ url: String, headers: [String: String]) async throws -> HTTP.Reply {
        var attempt = 1
        while true {
            do {
                return try await HTTP.get(url, headers: headers)
            } catch {
                guard attempt < 5 else { throw error }
                try await Task.sleep(for: .milliseconds(200 * attempt))
                attempt += 1
            }
        }
    }

    /// Writes `line` at once (print's buffer would hold a long run's progress until its end when piped).
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func eventually(timeout: Duration, _ what: String, _ check: () async throws -> Bool) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if try await check() { return }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw BenchmarkFailure("timed out: \(what)")
    }

    func canonical(_ value: Any) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed])) ?? Data())
    }

    static func digest(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }
}
