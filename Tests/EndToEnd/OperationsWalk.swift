import AppAttestTesting
import ChildProcess
import DevSuite
import Foundation

/// The walk's operations steps: what an operator relies on around the product — the gateway's
/// routes and readiness, a signing-key rotation, a PostgreSQL outage, and the runner's own
/// promises (`up` twice, `down`, a lost master key, `down --purge`).
struct OperationsWalk: Sendable {
    let suite: LocalSuite
    let gateway: HTTPClient
    let replicas: [HTTPClient]
    let replicaCounts: Replicas
    /// The suite's state folder and its database cluster's folder.
    var state: URL { URL(fileURLWithPath: suite.suite.layout.state, isDirectory: true) }
    var database: URL { URL(fileURLWithPath: suite.suite.layout.postgresData, isDirectory: true) }

    private static let services = ["auth", "delivery", "admin"]

    func readiness(_ service: String) async throws -> HTTPReply {
        try await gateway.send("GET", "/health/\(service)/ready")
    }

    /// Step 0: right after `up`.
    func gatewayAndReadiness() async throws {
        try expect(try await gateway.send("GET", "/health/live").status == 200, "the gateway's /health/live")
        for service in Self.services {
            let ready = try await readiness(service)
            try expect(ready.status == 200 && ready.json["status"] as? String == "ready", "\(service) ready: \(ready.status) \(ready.json)")
        }
        // Each service answers with its own JSON error and request id: the gateway routed it there.
        for (path, service) in [("/v1/auth/nothing", "auth"), ("/v1/admin/nothing", "admin"), ("/v1/config", "delivery")] {
            let reply = try await gateway.send("GET", path)
            try expect(reply.header("x-request-id") != nil && reply.errorCode != nil, "\(path) did not reach \(service): \(reply.status)")
        }
        try await suite.suite.up(replicaCounts)
        for service in Self.services { try expect(try await readiness(service).status == 200, "\(service) after a second up") }
    }

    /// The gateway's access log names the path of `downloaded` (a signed blob link) but none of its
    /// query: no signature, no token of any request reaches the log.
    func gatewayLogLeavesOutQueries(downloaded: String) throws {
        let log = try String(contentsOf: state.appendingPathComponent("logs/gateway-access.log"), encoding: .utf8)
        let path = String(downloaded.split(separator: "?", maxSplits: 1)[0])
        try expect(log.contains(path), "the gateway's access log does not name \(path)")
        let leaking = log.split(separator: "\n").filter { $0.contains("?") }
        try expect(leaking.isEmpty, "the gateway's access log holds query strings: \(leaking.prefix(3))")
    }

    /// A rotation run as an operator command reaches auth's JWKS through the event bus.
    func signingKeyRotation() async throws -> String {
        let output = try await suite.suite.run(.auth, ["rotate-signing-key", "--now"], capture: true)
        try expect(output.status == 0, "rotate-signing-key exited with \(output.status): \(output.output)")
        guard let line = output.output.split(separator: "\n").first(where: { $0.hasPrefix("New signing key ") }),
            let kid = line.dropFirst("New signing key ".count).split(separator: ":").first.map(String.init)
        else { throw WalkFailure("rotate-signing-key printed no key id: \(output.output)") }
        // Within 20 s: the bus carries it in well under one on a quiet machine, and auth's
        // maintenance round, which would find it without the bus, comes only once a minute.
        try await eventually("the new key in /.well-known/jwks.json", timeout: .seconds(20)) {
            String(decoding: try await gateway.send("GET", "/.well-known/jwks.json").body, as: UTF8.self).contains(kid)
        }
        return kid
    }

    /// PostgreSQL stopped: auth and admin answer 503 within 5 s, delivery serves from memory
    /// (200, degraded, and `servesConfig` holds), nothing exits; started again: every service
    /// ready without a restart.
    func databaseOutage(servesConfig: () async throws -> Bool) async throws {
        try await suite.suite.stopDatabase()
        try await eventually("auth and admin unavailable", timeout: .seconds(5)) {
            let (auth, admin) = (try await readiness("auth").status, try await readiness("admin").status)
            return auth == 503 && admin == 503
        }
        try await eventually("delivery degraded, still serving", timeout: .seconds(5)) {
            let reply = try await readiness("delivery")
            return reply.status == 200 && reply.json["status"] as? String == "degraded"
        }
        try expect(try await servesConfig(), "delivery stopped serving configs while PostgreSQL was down")
        for service in Self.services {
            try expect(try await gateway.send("GET", "/health/\(service)/live").status == 200, "\(service) exited while PostgreSQL was down")
        }
        try await suite.suite.startDatabase()
        try await eventually("every service ready again", timeout: .seconds(15)) {
            for service in Self.services where try await readiness(service).status != 200 { return false }
            return true
        }
    }

    /// A backup of the running suite, the database destroyed and the backup restored into a fresh
    /// cluster while the services run on: afterwards the same config is served to the same access
    /// token, the refresh token still refreshes, and a device revoked before the backup is still
    /// refused. Prints how long the restore took until every service was ready.
    func backupAndRestore(device: Device, key: String) async throws {
        let stolen = Device(attester: device.attester, team: device.appID.team, bundle: device.appID.bundle, gateway: gateway)
        try await stolen.attest(appVersion: "2.1.3")
        guard let stolenKey = stolen.key.map({ Data($0.keyId).base64EncodedString() }) else { throw WalkFailure("the second device has no key") }
        try await suite.sesame(["devices", "revoke", "--key-id", stolenKey, "--reason", "reported stolen"], key: key)
        try await eventually("the revoked device refused", timeout: .seconds(5)) { try await stolen.config(version: "2.1.3").status == 401 }
        let before = try await device.config(version: "2.1.3")
        try expect(before.status == 200, "before the backup: \(before.status)")

        let backup = state.appendingPathComponent("walk/sesame.dump").path
        try await suite.suite.backup(to: backup)
        let started = ContinuousClock.now
        try await suite.suite.restore(from: backup)
        try await eventually("every service ready on the restored database", timeout: .seconds(30)) {
            for service in Self.services where try await readiness(service).status != 200 { return false }
            return true
        }
        print("        restored and ready \((ContinuousClock.now - started).formatted(.units(allowed: [.milliseconds])))")

        let after = try await device.config(version: "2.1.3")
        try expect(
            after.status == 200 && after.header("etag") == before.header("etag") && after.body == before.body,
            "after the restore the same token got \(after.status), \(after.header("etag") ?? "no ETag") for \(before.header("etag") ?? "")")
        try expect(try await stolen.config(version: "2.1.3").status == 401, "the revoked device was served after the restore")
        let refreshed = try await device.refresh(try await device.assertedRefreshBody())
        try expect(refreshed.status == 200, "the refresh token after the restore: \(refreshed.status) \(refreshed.errorCode ?? "")")
    }

    /// PostgreSQL moved to another port under the running suite, then back: to the services a
    /// failover to a primary at another address. Each follows the URL file without a restart
    /// (the same processes); afterwards admin stores an upload, delivery serves it, and auth
    /// rotates the device's refresh family, all at the new address. Prints how long until ready.
    func databaseMove(device: Device, key: String) async throws {
        let layout = suite.suite.layout
        let processes = try servicePIDs()
        guard let elsewhere = (layout.postgresPort + 100..<layout.postgresPort + 200).first(where: {
            !PortProbe.accepts(host: "127.0.0.1", port: $0, timeoutMilliseconds: 200)
        }) else { throw WalkFailure("no free port near \(layout.postgresPort)") }
        for (round, port) in [elsewhere, layout.postgresPort].enumerated() {
            let started = ContinuousClock.now
            try await suite.suite.moveDatabase(to: port)
            try await eventually("every service ready on 127.0.0.1:\(port)", timeout: .seconds(30)) {
                for service in Self.services where try await readiness(service).status != 200 { return false }
                return true
            }
            print("        moved to port \(port), every service ready after \((ContinuousClock.now - started).formatted(.units(allowed: [.milliseconds])))")
            try expect(try servicePIDs() == processes, "a service restarted to follow the database")
            let marker = "moved-\(round)-\(port)"
            let uploaded = try await gateway.send(
                "POST", "/v1/admin/config/upload", headers: ["Authorization": "Bearer \(key)"],
                json: ["version": "2.1.*", "config": ["moved": marker]])
            try expect(uploaded.status == 200, "an upload after the move: \(uploaded.status) \(uploaded.errorCode ?? "")")
            try await eventually("delivery serves the upload made after the move", timeout: .seconds(10)) {
                let served = try await device.config(version: "2.1.3")
                return served.status == 200 && (served.json["config"] as? [String: Any])?["moved"] as? String == marker
            }
            let refreshed = try await device.refresh(try await device.assertedRefreshBody())
            try expect(refreshed.status == 200, "a refresh after the move: \(refreshed.status) \(refreshed.errorCode ?? "")")
        }
        let removed = try await gateway.send("DELETE", "/v1/admin/config?version=2.1.*", headers: ["Authorization": "Bearer \(key)"])
        try expect(removed.status == 200, "removing the move's pattern: \(removed.status) \(removed.errorCode ?? "")")
        // Every replica, asked directly: the walk's next step may reach either through the gateway.
        for (index, replica) in replicas.enumerated() {
            try await eventually("replica \(index) serves 2.1.3 from 2.* again", timeout: .seconds(10)) {
                try await device.config(version: "2.1.3", on: replica).json["matchedPattern"] as? String == "2.*"
            }
        }
    }

    /// The services' pids, by process name.
    private func servicePIDs() throws -> [String: String] {
        let folder = suite.suite.layout.pids
        var pids: [String: String] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: folder) where file.hasSuffix(".pid") && !file.hasPrefix("gateway") {
            pids[file] = try String(contentsOfFile: folder + "/" + file, encoding: .utf8)
        }
        return pids
    }

    /// After `down`: nothing answers, a state folder that lost its master key is refused with the
    /// way out, and `down --purge` removes the state and the database.
    func runnerPromises() async throws {
        for client in [gateway] + replicas {
            try expect((try? await client.send("GET", "/health/live")) == nil, "\(client.base) still answers after down")
        }
        try FileManager.default.removeItem(at: state.appendingPathComponent("master.key"))
        do {
            try await suite.suite.up()
            throw WalkFailure("up with a lost master key started the suite")
        } catch let refusal as SuiteError {
            try expect(
                refusal.description.contains("another master key") && refusal.description.contains("down --purge"),
                "up with a lost master key: \(refusal.description.suffix(300))")
        }
        try await suite.suite.down(purge: true)
        try expect(!FileManager.default.fileExists(atPath: state.path), "the state folder survived down --purge")
        try expect(!FileManager.default.fileExists(atPath: database.path), "the database survived down --purge")
    }
}
