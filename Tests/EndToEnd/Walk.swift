import DevSuite
import Foundation
import SesameKitTesting
import SesameVault

/// The steps of the walk, in order; each prints one line with its duration. 1–9 speak the HTTP
/// API as a device would; 0, 10, 11 and 17 are operations (`OperationsWalk`); 12–16 go through
/// SesameKit and `sesame-device` (`KitWalk`).
struct Walk: Sendable {
    let suite: LocalSuite
    let device: Device
    /// Each delivery replica, reached directly rather than through the gateway.
    let replicas: [HTTPClient]
    let work: URL
    /// The software App Attest root SesameKit's installs attest under (auth trusts it).
    let kitAuthority: SoftwareAttestationAuthority
    /// `kitAuthority` as a PEM bundle, for `sesame-device`.
    let deviceAuthority: String
    let operations: OperationsWalk
    /// The fake Apple DeviceCheck server the suite's services call.
    let apple: WalkApple
    /// Where the services export their traces.
    let traces: TraceCollector
    /// A config value no span may carry (uploaded in step 7, looked for in every span at the end).
    private static let traceCanary = "sk-walk-config-value-\(UUID().uuidString)"

    private static let vaultPassword = "correct horse battery staple, e2e"

    func run() async throws {
        var key = ""
        try await step(0, "the gateway routes each API to its service, every service is ready, a second up changes nothing") {
            try await operations.gatewayAndReadiness()
        }
        try await step(1, "operator registers the app; the CLI uploads * and 2.*") {
            key = try await suite.sesame(
                ["keys", "create", "--as-operator", "--team-id", device.appID.team, "--bundle-id", device.appID.bundle, "--name", "e2e"])
            try expect(key.hasPrefix("sk_prod_"), "keys create printed \(key)")
            try await upload(["tier": "default", "api_keys": ["maps": "m-1"]], pattern: "*", key: key)
            try await upload(["tier": "two", "api_keys": ["stripe": "sk-2", "maps": "m-2"], "features": ["chat": true]], pattern: "2.*", key: key)
        }
        try await step(2, "device attests; 2.1.3 gets 2.*, 3.0 gets *, scope narrows, ETag gives 304") {
            try await device.attest(appVersion: "2.1.3")
            // A fresh suite: auth made its first signing key a moment ago, and a replica learns a
            // new key id at its next reload, at most a second after the last. Every replica must
            // accept the token within that, or the gateway's round robin would answer 401.
            let attested = ContinuousClock.now
            for (index, replica) in replicas.enumerated() {
                try await eventually("replica \(index) accepts the new token", timeout: .seconds(3)) {
                    try await device.config(version: "2.1.3", on: replica).status == 200
                }
            }
            let accepted = ContinuousClock.now - attested
            print("        every replica accepts the token after \(accepted.formatted(.units(allowed: [.milliseconds])))")
            let two = try await served(version: "2.1.3", pattern: "2.*")
            try expect((two.json["config"] as? [String: Any])?["tier"] as? String == "two", "2.1.3 config: \(two.json)")
            _ = try await served(version: "3.0", pattern: "*")
            let scoped = try await device.config(version: "2.1.3", scope: "api_keys.stripe")
            try expect(scoped.status == 200, "scoped: \(scoped.status)")
            let config = scoped.json["config"] as? [String: Any]
            try expect(
                config?.keys.sorted() == ["api_keys"] && (config?["api_keys"] as? [String: Any])?.keys.sorted() == ["stripe"],
                "scope api_keys.stripe gave \(config ?? [:])")
            // Both replicas hold 2.* before the ETag is compared: the gateway may send the next
            // request to the one that has not loaded the upload yet, which rightly answers 200.
            for (index, replica) in replicas.enumerated() {
                try await eventually("replica \(index) serves 2.1.3 from 2.*") {
                    try await device.config(version: "2.1.3", on: replica).json["matchedPattern"] as? String == "2.*"
                }
            }
            guard let etag = two.header("ETag") else { throw WalkFailure("no ETag on the config") }
            let again = try await device.config(version: "2.1.3", ifNoneMatch: etag)
            try expect(again.status == 304 && again.body.isEmpty, "If-None-Match: \(again.status)")
        }
        try await step(3, "kill switch on 2.1.3 gives 403 with the reason; cleared gives 200") {
            let reason = "2.1.3 leaks tokens; update to 2.1.4"
            try await suite.sesame(["kill-switch", "--versions", "2.1.3", "--reason", reason], key: key)
            try await eventually("403 version_disabled") {
                let reply = try await device.config(version: "2.1.3")
                return reply.status == 403 && reply.errorCode == "version_disabled" && reply.errorMessage?.contains(reason) == true
            }
            try await suite.sesame(["kill-switch", "--versions", "2.1.3", "--clear"], key: key)
            try await eventually("200 after clearing") { try await device.config(version: "2.1.3").status == 200 }
        }
        try await step(4, "emergency revoke: the old token gets 401; after re-attesting, 200") {
            try await Task.sleep(for: .seconds(1))  // tokens count by the second: the revocation must be later than this token
            try await suite.sesame(["revoke", "--ver", "2.*"], key: key)
            try await eventually("401 token_revoked") {
                let reply = try await device.config(version: "2.1.3")
                return reply.status == 401 && reply.errorCode == "token_revoked"
            }
            try await Task.sleep(for: .seconds(1))
            try await device.attest(appVersion: "2.1.3")
            let fresh = try await device.config(version: "2.1.3")
            try expect(fresh.status == 200, "new token after revocation: \(fresh.status) \(fresh.errorCode ?? "")")
        }
        try await step(5, "zero knowledge: the CLI encrypts and uploads; the device decrypts the original bytes") {
            let plain = work.appendingPathComponent("secrets.json")
            let original = Data(#"{"openai":"sk-live-e2e","pin":"4242"}"#.utf8)
            try original.write(to: plain)
            let vault = ["SESAME_VAULT_PASS": Self.vaultPassword]
            try await suite.sesame(["encrypt", "--file", plain.path], extra: vault)
            try await upload(file: plain.path + ".enc", pattern: "4.*", key: key)
            let reply = try await served(version: "4.0", pattern: "4.*")
            let stored = try JSONSerialization.data(withJSONObject: reply.json["config"] ?? [:])
            guard let envelope = try VaultEnvelope.decode(stored) else { throw WalkFailure("4.0 is not an envelope: \(reply.json)") }
            try expect(try envelope.open(password: Self.vaultPassword) == original, "the decrypted config differs from the file")
            try expect(!String(decoding: reply.body, as: UTF8.self).contains("sk-live-e2e"), "the plaintext travelled")
        }
        try await step(6, "blob upload, link, download (its signature not in the gateway log); user data proven by an ID token: put, get, conflicting put 412, another user's token 404, a bare id refused") {
            let blob = Data((0..<(300 * 1024)).map { _ in UInt8.random(in: 0...255) })
            let file = work.appendingPathComponent("model.bin")
            try blob.write(to: file)
            try await suite.sesame(["blob", "upload", "--file", file.path], key: key)
            let link = try await device.call("GET", "/v1/blob/model.bin")
            guard link.status == 200, let url = link.json["url"] as? String else { throw WalkFailure("blob link: \(link.status)") }
            let download = try await device.gateway.send("GET", url)
            try expect(download.status == 200 && download.body == blob, "download: \(download.status), \(download.body.count) bytes")
            try operations.gatewayLogLeavesOutQueries(downloaded: url)

            let issuer = IdentityIssuer(audience: device.appID.bundle)
            let policy = try await device.gateway.send("PUT", "/v1/admin/policy", headers: ["Authorization": "Bearer \(key)"], json: issuer.policy)
            try expect(policy.status == 200, "policy: \(policy.status) \(String(decoding: policy.body, as: UTF8.self))")
            let alice = ["X-Sesame-Identity-Token": try issuer.token(subject: "alice")]
            let document = Data(#"{"theme":"dark","streak":3}"#.utf8)
            // The policy reaches every replica through the event bus; the gateway may send the put
            // and the get to different replicas, so both must know the issuer first.
            for (index, replica) in replicas.enumerated() {
                try await eventually("replica \(index) knows the identity issuer", timeout: .seconds(5)) {
                    try await device.call("GET", "/v1/user/data", headers: alice, on: replica).errorCode != "identity_not_configured"
                }
            }
            let put = try await device.call("PUT", "/v1/user/data", headers: alice.merging(["If-Match": "\"0\""]) { $1 }, body: document)
            try expect(put.status == 200, "first put: \(put.status) \(put.errorCode ?? "")")
            let get = try await device.call("GET", "/v1/user/data", headers: alice)
            try expect(get.status == 200 && get.body == document, "get: \(get.status) \(String(decoding: get.body, as: UTF8.self))")
            let conflict = try await device.call("PUT", "/v1/user/data", headers: alice.merging(["If-Match": "\"0\""]) { $1 }, body: document)
            try expect(conflict.status == 412, "stale If-Match: \(conflict.status)")
            let bob = try await device.call("GET", "/v1/user/data", headers: ["X-Sesame-Identity-Token": try issuer.token(subject: "bob")])
            try expect(bob.status == 404, "another user's document: \(bob.status)")
            let named = try await device.call("GET", "/v1/user/data?user_id=alice")
            try expect(named.status == 400, "a user id in the URL: \(named.status)")
        }
        try await step(7, "an upload is served by every delivery replica within 1 s; its trace runs from admin's request through the outbox and Kafka to each replica's reload") {
            let spansBefore = traces.all.count
            // A client's own trace context does not reach the services: the gateway drops it, so an
            // outside caller cannot pick trace ids or make every request of theirs sampled.
            let outsideTrace = "5e5a3e0000000000000000000000beef"
            let traced = try await device.gateway.send(
                "GET", "/v1/admin/policy", headers: ["Authorization": "Bearer \(key)", "traceparent": "00-\(outsideTrace)-00000000000000aa-01"])
            try expect(traced.status == 200, "policy with an outside traceparent: \(traced.status)")
            let revision = try await upload(["tier": "default", "round": 7, "apiKey": Self.traceCanary], pattern: "*", key: key)
            let acknowledged = ContinuousClock.now
            try await servedEverywhere(revision: revision, timeout: .seconds(5))
            let elapsed = ContinuousClock.now - acknowledged
            try expect(elapsed < .seconds(1), "took \(elapsed) to reach \(replicas.count) replicas")
            print("        visible at \(replicas.count) replicas after \(elapsed.formatted(.units(allowed: [.milliseconds])))")
            try await uploadTraced(since: spansBefore)
            let continued = traces.all.filter { $0.traceID == outsideTrace }
            try expect(continued.isEmpty, "spans continued an outside trace: \(continued.prefix(3).map { "\($0.service) \($0.name)" })")
            try expect(
                traces.all.dropFirst(spansBefore).contains { $0.service == "sesame-admin" && $0.attributes["http.route"]?.hasSuffix("/policy") == true },
                "the policy read has no span of its own")
        }
        try await step(8, "broker stopped, upload succeeds; broker back, every replica converges") {
            await suite.suite.stopBroker()
            let during = try await upload(["tier": "default", "round": 8], pattern: "*", key: key)
            try await suite.suite.startBroker()
            let back = ContinuousClock.now
            try await servedEverywhere(revision: during, timeout: .seconds(60))
            print("        converged \((ContinuousClock.now - back).formatted(.units(allowed: [.milliseconds]))) after the broker returned")
            let after = try await upload(["tier": "default", "round": 9], pattern: "*", key: key)
            try await servedEverywhere(revision: after, timeout: .seconds(30))
        }
        try await step(9, "refresh with an assertion; a replayed assertion and a reused refresh token are refused") {
            let asserted = try await device.assertedRefreshBody()
            let used = device.refreshToken
            let first = try await device.refresh(asserted)
            try expect(first.status == 200, "asserted refresh: \(first.status) \(first.errorCode ?? "")")
            var replay = asserted
            replay["refreshToken"] = device.refreshToken
            let replayed = try await device.refresh(replay)
            try expect(replayed.status == 401 || replayed.status == 400, "replayed assertion: \(replayed.status)")
            try expect(replayed.errorCode == "assertion_invalid" || replayed.errorCode == "invalid_challenge",
                       "replayed assertion refused as \(replayed.errorCode ?? "nothing")")
            let current = device.refreshToken
            let reused = try await device.refresh(["refreshToken": used] as [String: Any])
            try expect(reused.status == 401 && reused.errorCode == "refresh_token_reused", "reused token: \(reused.status) \(reused.errorCode ?? "")")
            let family = try await device.refresh(try await device.assertedRefreshBody().merging(["refreshToken": current]) { $1 })
            try expect(family.status == 401, "the family's newest token still works after the reuse: \(family.status)")
        }
        try await step(10, "rotate-signing-key: the new key reaches auth's JWKS through the event bus; every replica accepts its tokens") {
            let kid = try await operations.signingKeyRotation()
            try await device.attest(appVersion: "2.1.3")
            for (index, replica) in replicas.enumerated() {
                try await eventually("replica \(index) accepts a token signed by \(kid)", timeout: .seconds(3)) {
                    try await device.config(version: "2.1.3", on: replica).status == 200
                }
            }
        }
        try await step(11, "PostgreSQL stopped: auth and admin 503 within 5 s, delivery degraded and still serving configs; back: all ready, no restart") {
            try await operations.databaseOutage { try await device.config(version: "2.1.3").status == 200 }
        }
        try await step(12, "backup while serving; the database destroyed and restored into a fresh cluster: the same config, the same tokens, a revoked device still refused") {
            try await operations.backupAndRestore(device: device, key: key)
        }
        try await step(13, "PostgreSQL moved to another port under the running suite and back: every service follows its URL file without a restart; uploads, delivery and refreshes work at each address") {
            try await operations.databaseMove(device: device, key: key)
        }
        let kit = KitWalk(
            suite: suite, gateway: suite.gateway, authority: kitAuthority, team: device.appID.team, bundle: device.appID.bundle, key: key,
            vaultPassword: Self.vaultPassword, deviceAuthority: deviceAuthority, apple: apple)
        try await kit.run { number, title, body in try await step(number, title, body) }
        try await step(23, "no exported span carries a secret; after down nothing answers; a lost master key is refused with the way out; down --purge removes state and database") {
            try spansCarryNoSecret(key: key)
            try await operations.runnerPromises()
        }
    }

    // MARK: Helpers

    private func step(_ number: Int, _ title: String, _ body: () async throws -> Void) async throws {
        let started = ContinuousClock.now
        do {
            try await body()
        } catch {
            print(String(format: "e2e %d FAIL %@ (%.2f s): %@", number, title, (ContinuousClock.now - started).seconds, "\(error)"))
            throw error
        }
        print(String(format: "e2e %d ok   %@ (%.2f s)", number, title, (ContinuousClock.now - started).seconds))
    }

    /// Uploads `config` for `pattern` with the CLI; returns the new revision.
    @discardableResult
    private func upload(_ config: [String: Any], pattern: String, key: String) async throws -> Int {
        let file = work.appendingPathComponent("upload-\(UUID().uuidString).json")
        try JSONSerialization.data(withJSONObject: config).write(to: file)
        return try await upload(file: file.path, pattern: pattern, key: key)
    }

    @discardableResult
    private func upload(file: String, pattern: String, key: String) async throws -> Int {
        let reply = try await suite.sesame(["upload", "--file", file, "--ver", pattern, "--json"], key: key)
        struct Published: Decodable { let revision: Int }
        do {
            return try JSONDecoder().decode(Published.self, from: Data(reply.utf8)).revision
        } catch {
            throw WalkFailure("upload printed \(reply): \(error)")
        }
    }

    /// Waits until the gateway serves `version` from `pattern`, and returns that reply.
    private func served(version: String, pattern: String) async throws -> HTTPReply {
        var last: HTTPReply?
        try await eventually("\(version) served from \(pattern)") {
            last = try await device.config(version: version)
            return last?.status == 200 && last?.json["matchedPattern"] as? String == pattern
        }
        return last!
    }

    /// One upload's trace, among the spans exported after `index`: admin's request span is the
    /// parent of the outbox relay's publish span, which is the parent of an `apply app.changed`
    /// span in every delivery replica (told apart by `service.instance.id`).
    private func uploadTraced(since index: Int) async throws {
        var seen = "no publish span"
        do {
            try await eventually("the upload's trace reaches every delivery replica", timeout: .seconds(10)) {
                let spans = Array(traces.all.dropFirst(index))
                for publish in spans where publish.service == "sesame-admin" && publish.name.hasPrefix("publish ") {
                    let request = spans.first { $0.traceID == publish.traceID && $0.spanID == publish.parentID }
                    let applied = spans.filter {
                        $0.traceID == publish.traceID && $0.parentID == publish.spanID && $0.service == "sesame-delivery" && $0.name == "apply app.changed"
                    }
                    seen = "publish under \(request.map { "\($0.service) \($0.name)" } ?? "no parent"); applied at \(Set(applied.map(\.instance)).sorted())"
                    if let request, request.service == "sesame-admin", request.attributes["http.route"]?.contains("config") == true,
                        Set(applied.map(\.instance)).count == replicas.count
                    {
                        print("        traced: \(request.name) → \(publish.name) → \(applied.count) replicas")
                        return true
                    }
                }
                return false
            }
        } catch {
            throw WalkFailure("\(error); last seen: \(seen)")
        }
        try expect(traces.unreadableExports.isEmpty, "the collector could not read: \(traces.unreadableExports)")
    }

    /// Every span exported during the walk, names and attributes, against the secrets the walk
    /// knows: a config value, the app's key, the operator token, the relay's upstream key, the
    /// vault password, and anything shaped like a token.
    private func spansCarryNoSecret(key: String) throws {
        let spans = traces.all
        try expect(spans.count > 100, "only \(spans.count) spans were exported")
        let secrets = [Self.traceCanary, key, FakeLLM.apiKey, Self.vaultPassword, suite.environment["SESAME_OPERATOR_TOKEN"] ?? ""].filter { !$0.isEmpty }
        for span in spans {
            for text in [span.name] + Array(span.attributes.values) {
                for secret in secrets where text.contains(secret) {
                    throw WalkFailure("span \(span.service) \(span.name) carries a secret (\(secret.prefix(6))…)")
                }
                if text.contains("eyJ") || text.lowercased().contains("bearer ") {
                    throw WalkFailure("span \(span.service) \(span.name) carries what looks like a token: \(text.prefix(40))")
                }
            }
        }
        // A request span names its route, never the path or query it was called with.
        let leaking = spans.filter { !Set($0.attributes.keys).isDisjoint(with: ["url.path", "url.query", "url.full", "http.target"]) }
        try expect(leaking.isEmpty, "spans with a URL: \(leaking.prefix(3).map { "\($0.service) \($0.name) \($0.attributes.keys.sorted())" })")
        let requests = spans.filter { $0.attributes["http.request.method"] != nil }
        try expect(!requests.isEmpty && requests.allSatisfy { $0.attributes["http.response.status_code"] != nil }, "a request span without its status")
        print("        \(spans.count) spans from \(Set(spans.map(\.service)).sorted().joined(separator: ", ")), none with a secret or a URL")
    }

    /// Waits until every replica, asked directly, serves `revision` of `*` (for version 9.9.9).
    private func servedEverywhere(revision: Int, timeout: Duration) async throws {
        for (index, replica) in replicas.enumerated() {
            try await eventually("replica \(index) serves revision \(revision)", timeout: timeout) {
                try await device.config(version: "9.9.9", on: replica).json["revision"] as? Int == revision
            }
        }
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
