import AppAttest
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SesameTestSupport
import Testing

@Suite("Staged rollouts through the API: upload a share, widen, pause, resume, complete, roll back", .timeLimit(.minutes(4)))
struct RolloutDeliveryTests {
    /// What one install got: the revision, and whether the answer placed it in a rollout.
    struct Got: Equatable, CustomStringConvertible {
        let revision: Int?
        let included: Bool?
        var description: String { "revision \(revision.map(String.init) ?? "none"), included \(included.map(String.init) ?? "-")" }
    }

    func got(_ reply: DeliveryHarness.Reply) -> Got {
        Got(revision: reply.json["revision"] as? Int, included: (reply.json["rollout"] as? [String: Any])?["included"] as? Bool)
    }

    /// Waits until every install, on every delivery instance, gets what `expected` says for it.
    func waitUntil(
        _ harness: DeliveryHarness, _ tokens: [String], _ what: String, expected: @escaping @Sendable (Int) -> Got
    ) async throws {
        for instance in harness.deliveries.indices {
            try await eventually(timeout: .seconds(10), "\(what) on delivery \(instance)") {
                for (index, token) in tokens.enumerated() {
                    guard got(try await harness.fetch(version: "2.1.3", token: token, instance: instance)) == expected(index) else { return false }
                }
                return true
            }
        }
    }

    /// A management request with the app's provisioning key, its reply read as JSON.
    func admin(_ harness: DeliveryHarness, _ method: HTTPRequest.Method, _ uri: String) async throws -> DeliveryHarness.Reply {
        try await harness.admin.execute(uri: uri, method: method, headers: [.authorization: "Bearer \(harness.key)"]) { DeliveryHarness.Reply($0) }
    }

    /// The `sub` claim of a token: the install's key id, as rollouts bucket it.
    func subject(of token: String) throws -> String {
        var payload = String(token.split(separator: ".")[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while payload.count % 4 != 0 { payload += "=" }
        let claims = try JSONSerialization.jsonObject(with: try #require(Data(base64Encoded: payload))) as? [String: Any]
        return try #require(claims?["sub"] as? String)
    }

    @Test("a rollout reaches its share of installs, sticky per install, counted once across replicas; every step is audited and propagated")
    func lifecycle() async throws {
        // Delivery writes its install counts every resync interval.
        try await DeliveryHarness.run(resyncInterval: .seconds(1)) { harness in
            let old = try await harness.upload(["name": "old"], version: "2.*")
            var tokens: [String] = []
            for _ in 0..<24 { tokens.append(try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken) }
            try await harness.waitUntilServed(version: "2.1.3", revision: old, token: tokens[0])

            // Refusals before anything is changed.
            for percent in [100.0, -1, 12.345] {
                let refused = try await harness.manage(.post, "config/upload", ["version": "2.*", "config": ["name": "x"], "rollout": percent])
                #expect((refused["error"] as? [String: Any])?["code"] as? String == "invalid_request", "\(percent)")
            }
            let nothing = try await harness.manage(.post, "config/rollout", ["version": "2.*", "action": "pause"])
            #expect((nothing["error"] as? [String: Any])?["code"] as? String == "rollout_not_found")

            // Half the installs get the new revision; the answer says which side each is on.
            let started = try await harness.manage(.post, "config/upload", ["version": "2.*", "config": ["name": "new"], "rollout": 50])
            let new = try #require(started["revision"] as? Int)
            let rollout = try #require(started["rollout"] as? [String: Any])
            #expect(rollout["percent"] as? Double == 50)
            #expect(rollout["previousRevision"] as? Int == old)
            #expect(rollout["state"] as? String == "active")
            try await eventually(timeout: .seconds(10), "the rollout served") {
                try await harness.fetch(version: "2.1.3", token: tokens[0]).json["rollout"] != nil
            }
            var firstSplit: [Bool] = []
            for token in tokens {
                let reply = try await harness.fetch(version: "2.1.3", token: token)
                let placement = try #require(reply.json["rollout"] as? [String: Any])
                #expect(placement["id"] as? String == rollout["id"] as? String)
                let included = try #require(placement["included"] as? Bool)
                #expect(reply.json["revision"] as? Int == (included ? new : old))
                #expect(reply.config?["name"] as? String == (included ? "new" : "old"))
                firstSplit.append(included)
            }
            // 24 installs at 50 %: both sides hold some (all on one side: one chance in 8 million).
            #expect(firstSplit.contains(true) && firstSplit.contains(false))
            let split = firstSplit
            try await waitUntil(harness, tokens, "the same split on every instance") { Got(revision: split[$0] ? new : old, included: split[$0]) }

            // Each side's distinct installs: every install fetched from both replicas, counted once.
            try await eventually(timeout: .seconds(15), "the installs counted") {
                let listed = try await admin(harness, .get, "/v1/admin/config/rollouts?version=2.*")
                let installs = (listed.json["rollouts"] as? [[String: Any]])?.first?["installs"] as? [String: Int]
                let (inside, outside) = (split.count(where: { $0 }), split.count(where: { !$0 }))
                // HyperLogLog's linear counting: two installs may share one of 4,096 registers.
                return abs((installs?["included"] ?? -9) - inside) <= 1 && abs((installs?["excluded"] ?? -9) - outside) <= 1
            }

            // And as a metric, per replica (the registry is this process's, shared by both). Each
            // replica sets the gauge when it saves its sketches, the last one written wins, and the
            // merged count above can be whole before both replicas' latest saves: wait for it here too.
            let rolloutID = try #require(rollout["id"] as? String)
            func counted() async throws -> [Substring] {
                let metrics = try await harness.deliveries[0].execute(uri: "/metrics", method: .get) { String(buffer: $0.body) }
                return metrics.split(separator: "\n").filter { $0.hasPrefix("sesame_delivery_rollout_installs{") && $0.contains(rolloutID) }
            }
            func total(_ lines: [Substring]) -> Double { lines.compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +) }
            try await eventually(timeout: .seconds(15), "the metric counts the installs") { total(try await counted()) >= Double(split.count - 2) }
            let lines = try await counted()
            #expect(lines.count == 2, "\(lines)")
            #expect(total(lines) >= Double(split.count - 2))

            // The dry run places a named install as delivery does.
            let insider = try #require(tokens.indices.first { split[$0] })
            let resolved = try await admin(harness, .get, "/v1/admin/config/resolve?version=2.1.3&install=\(try subject(of: tokens[insider]))")
            #expect(resolved.json["revision"] as? Int == new)
            #expect((resolved.json["rollout"] as? [String: Any])?["included"] as? Bool == true)

            // While it is in flight, the pattern's revisions are the rollout's to change.
            for (path, body) in [
                ("config/upload", ["version": "2.*", "config": ["name": "other"]] as [String: Any]),
                ("config/rollback", ["version": "2.*", "revision": old]),
            ] {
                let refused = try await harness.manage(.post, path, body)
                #expect((refused["error"] as? [String: Any])?["code"] as? String == "rollout_in_progress", "\(path)")
            }
            let deleteRefused = try await admin(harness, .delete, "/v1/admin/config?version=2.*")
            #expect(deleteRefused.errorCode == "rollout_in_progress")

            // Pause: everyone gets the previous revision; resume: the same installs get the new one again.
            try await harness.manage(.post, "config/rollout", ["version": "2.*", "action": "pause"])
            try await waitUntil(harness, tokens, "paused") { _ in Got(revision: old, included: false) }
            try await harness.manage(.post, "config/rollout", ["version": "2.*", "action": "resume"])
            try await waitUntil(harness, tokens, "resumed") { Got(revision: split[$0] ? new : old, included: split[$0]) }

            // Widen: never narrower; every install that had it keeps it.
            let narrower = try await harness.manage(.post, "config/rollout", ["version": "2.*", "action": "widen", "percent": 10])
            #expect((narrower["error"] as? [String: Any])?["code"] as? String == "rollout_not_wider")
            let widened = try await harness.manage(.post, "config/rollout", ["version": "2.*", "action": "widen", "percent": 90])
            #expect((widened["rollout"] as? [String: Any])?["percent"] as? Double == 90)
            try await eventually(timeout: .seconds(10), "widened") {
                var wide: [Bool] = []
                for token in tokens { wide.append(try await harness.fetch(version: "2.1.3", token: token).json["revision"] as? Int == new) }
                return zip(split, wide).allSatisfy { !$0 || $1 } && wide.count(where: { $0 }) > split.count(where: { $0 })
            }

            // Roll back: everyone gets the old config again, as a new revision; the rollout is over.
            let rolledBack = try await harness.manage(.post, "config/rollout", ["version": "2.*", "action": "rollback"])
            let restored = try #require(rolledBack["restoredAs"] as? Int)
            #expect((rolledBack["rollout"] as? [String: Any])?["state"] as? String == "rolled_back")
            try await waitUntil(harness, tokens, "rolled back") { _ in Got(revision: restored, included: nil) }
            #expect(try await harness.fetch(version: "2.1.3", token: tokens[0]).config?["name"] as? String == "old")

            // A second rollout, completed: everyone gets its revision and no answer names it.
            let second = try await harness.manage(.post, "config/upload", ["version": "2.*", "config": ["name": "newer"], "rollout": 5])
            let newer = try #require(second["revision"] as? Int)
            let completed = try await harness.manage(.post, "config/rollout", ["version": "2.*", "action": "complete"])
            #expect((completed["rollout"] as? [String: Any])?["state"] as? String == "completed")
            try await waitUntil(harness, tokens, "completed") { _ in Got(revision: newer, included: nil) }

            let listed = try await admin(harness, .get, "/v1/admin/config/rollouts?version=2.*")
            #expect((listed.json["rollouts"] as? [[String: Any]])?.compactMap { $0["state"] as? String } == ["completed", "rolled_back"])

            let audit = try await admin(harness, .get, "/v1/admin/audit?limit=1000")
            let actions = (audit.json["entries"] as? [[String: Any]] ?? []).compactMap { $0["action"] as? String }
            for step in ["start", "pause", "resume", "widen", "rollback", "complete"] {
                #expect(actions.contains("config.rollout.\(step)"), "\(step) audited")
            }
        }
    }

    @Test("where the pattern served nothing before, installs outside the rollout get the less specific pattern")
    func firstRevisionFallsThrough() async throws {
        try await DeliveryHarness.run { harness in
            let fallback = try await harness.upload(["name": "any"], version: "*")
            var tokens: [String] = []
            for _ in 0..<16 { tokens.append(try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken) }
            try await harness.waitUntilServed(version: "2.1.3", revision: fallback, token: tokens[0])
            let started = try await harness.manage(.post, "config/upload", ["version": "2.*", "config": ["name": "two"], "rollout": 0])
            #expect((started["rollout"] as? [String: Any])?["previousRevision"] == nil)
            try await harness.manage(.post, "config/rollout", ["version": "2.*", "action": "widen", "percent": 100])
            try await waitUntil(harness, tokens, "everyone in") { _ in Got(revision: 1, included: true) }
            // Rolled back, the pattern is deleted again: everyone is back on `*`.
            try await harness.manage(.post, "config/rollout", ["version": "2.*", "action": "rollback"])
            try await waitUntil(harness, tokens, "back on *") { _ in Got(revision: fallback, included: nil) }
            #expect(try await harness.fetch(version: "2.1.3", token: tokens[0]).json["matchedPattern"] as? String == "*")
        }
    }

    @Test("a device override gives one install a chosen revision, above a rollout; kill switches stay above it; it can be taken back")
    func deviceOverride() async throws {
        try await DeliveryHarness.run { harness in
            let first = try await harness.upload(["name": "first"], version: "2.*")
            let tester = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken
            let someone = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken
            try await harness.waitUntilServed(version: "2.1.3", revision: first, token: someone)
            let started = try await harness.manage(.post, "config/upload", ["version": "2.*", "config": ["name": "next"], "rollout": 0])
            let next = try #require(started["revision"] as? Int)
            let install = try subject(of: tester)

            // Refusals: a revision that does not exist, a malformed install, no label.
            for (body, code) in [
                (["version": "2.*", "install": install, "revision": 99, "label": "Ana's iPhone"] as [String: Any], "revision_not_found"),
                (["version": "2.*", "install": "not a key/id", "revision": next, "label": "Ana's iPhone"], "invalid_request"),
                (["version": "2.*", "install": install, "revision": next, "label": " "], "invalid_request"),
            ] {
                let refused = try await harness.manage(.post, "config/overrides", body)
                #expect((refused["error"] as? [String: Any])?["code"] as? String == code, "\(body)")
            }

            // The tester's phone sees the rollout's revision at 0 %; everyone else the first one.
            try await harness.manage(.post, "config/overrides", ["version": "2.*", "install": install, "revision": next, "label": "Ana's iPhone"])
            try await waitUntil(harness, [tester, someone], "the override served") { $0 == 0 ? Got(revision: next, included: nil) : Got(revision: first, included: false) }
            #expect(try await harness.fetch(version: "2.1.3", token: tester).json["deviceOverride"] as? Bool == true)
            #expect(try await harness.fetch(version: "2.1.3", token: tester).config?["name"] as? String == "next")
            let resolved = try await admin(harness, .get, "/v1/admin/config/resolve?version=2.1.3&install=\(install)")
            #expect(resolved.json["decidedBy"] as? String == "deviceOverride")
            #expect(resolved.json["revision"] as? Int == next)
            let listed = try await admin(harness, .get, "/v1/admin/config/overrides")
            #expect((listed.json["overrides"] as? [[String: Any]])?.first?["label"] as? String == "Ana's iPhone")

            // A kill switch covers the tester too.
            _ = try await harness.manage(.post, "kill-switch", ["versions": ["2.1.*"], "enabled": false, "reason": "Stop."])
            try await eventually(timeout: .seconds(10), "switched off for the tester") {
                try await harness.fetch(version: "2.1.3", token: tester).errorCode == "version_disabled"
            }
            _ = try await harness.manage(.post, "kill-switch", ["versions": ["2.1.*"], "enabled": true])

            // Taken back: the tester is in the rollout's 0 % again, like everyone.
            let removed = try await admin(harness, .delete, "/v1/admin/config/overrides?version=2.*&install=\(install)")
            #expect(removed.status == .ok)
            try await waitUntil(harness, [tester, someone], "the override gone") { _ in Got(revision: first, included: false) }
            let again = try await admin(harness, .delete, "/v1/admin/config/overrides?version=2.*&install=\(install)")
            #expect(again.errorCode == "override_not_found")
        }
    }

    @Test("a pattern qualified @development reaches development builds (Xcode keys, debug tokens) first; App Store and TestFlight keys never see it")
    func developmentConfigs() async throws {
        try await DeliveryHarness.run { harness in
            let production = try await harness.upload(["backend": "https://api.example.com"], version: "2.*")
            let development = try await harness.upload(["backend": "https://staging.example.com"], version: "*@development")
            let xcode = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3", environment: .development).accessToken
            let store = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3", environment: .production).accessToken
            try await eventually(timeout: .seconds(10), "both served") {
                try await harness.fetch(version: "2.1.3", token: xcode).json["matchedPattern"] as? String == "*@development"
            }
            let sandbox = try await harness.fetch(version: "2.1.3", token: xcode)
            #expect(sandbox.json["revision"] as? Int == development)
            #expect(sandbox.config?["backend"] as? String == "https://staging.example.com")
            let live = try await harness.fetch(version: "2.1.3", token: store)
            #expect(live.json["matchedPattern"] as? String == "2.*" && live.json["revision"] as? Int == production)
            #expect(live.config?["backend"] as? String == "https://api.example.com")

            // The dry run, and the pattern's own history, rollouts and refusals like any other.
            let resolved = try await admin(harness, .get, "/v1/admin/config/resolve?version=2.1.3&environment=development")
            #expect(resolved.json["matchedPattern"] as? String == "*@development")
            let history = try await admin(harness, .get, "/v1/admin/config/history?version=*@development")
            #expect((history.json["revisions"] as? [[String: Any]])?.count == 1)
            for bad in ["*@staging", "2.x@development", "@development"] {
                let refused = try await harness.manage(.post, "config/upload", ["version": bad, "config": ["a": 1]])
                #expect((refused["error"] as? [String: Any])?["code"] as? String == "invalid_version_pattern", "\(bad)")
            }
            // A kill switch names versions, never an environment.
            let killRefused = try await harness.manage(.post, "kill-switch", ["versions": ["2.*@development"], "enabled": false, "reason": "x"])
            #expect((killRefused["error"] as? [String: Any])?["code"] as? String == "invalid_version_pattern")
        }
    }
}
