import Foundation
import HTTPTypes
import HummingbirdTesting
import SesameKit
import SesameTestSupport
import SesameTokens
import Testing

/// `GET /v1/config/updates` as a client reads it, over a real socket: the events it says, and
/// every gate of `GET /v1/config` pushed down the open stream.
@Suite("Live-config streams", .timeLimit(.minutes(3)))
struct ConfigUpdateStreamTests {
    /// One open stream's events, read as they arrive. Unchecked: read by one task at a time (a
    /// burst hands each reader from the task that opened it to the one that holds it).
    final class EventReader: @unchecked Sendable {
        private var chunks: AsyncThrowingStream<Data, any Error>.AsyncIterator
        private var parser = ServerSentEventParser()
        private var ready: [ServerSentEvent] = []
        let status: Int

        init(delivery: any TestClientProtocol, token: String, lastEventID: String? = nil, scope: String? = nil) async throws {
            var headers = ["authorization": "Bearer \(token)", "accept": "text/event-stream"]
            headers["last-event-id"] = lastEventID
            let url = URL(string: "http://127.0.0.1:\(try #require(delivery.port))/v1/config/updates?version=2.1.3\(scope.map { "&scope=\($0)" } ?? "")")!
            let (head, body) = try await URLSessionTransport().stream(HTTPExchange.Request(method: "GET", url: url, headers: headers))
            status = head.status
            chunks = body.makeAsyncIterator()
        }

        /// The rest of the body as text (a refusal's JSON).
        func body() async throws -> String {
            var text = ""
            while let chunk = try await chunks.next() { text += String(decoding: chunk, as: UTF8.self) }
            return text
        }

        /// The next event (name, id, data), as SesameKit's parser reads it; nil when the stream ended.
        func next() async throws -> (event: String, id: String?, data: String)? {
            while ready.isEmpty {
                guard let chunk = try await chunks.next() else { return nil }
                ready += parser.feed(chunk)
            }
            let event = ready.removeFirst()
            return (event.event, event.id, event.data)
        }
    }

    /// Who opens a stream: the event loop's fast path for a token the replica verified before (an
    /// app fetched its config first), the router for a token it has not seen.
    enum Opener: String, CaseIterable, CustomTestStringConvertible {
        case fastPath, router
        var testDescription: String { rawValue }
    }

    @Test(
        "announces the config's ETag on connect and on a change, not again on a reconnect that names it, and pushes a kill switch, ending the stream",
        arguments: Opener.allCases)
    func changesAndKillSwitch(opener: Opener) async throws {
        try await DeliveryHarness.run { harness in
            let first = try await harness.upload(["flag": 1], version: "2.*")
            let token = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken
            try await harness.waitUntilServed(version: "2.1.3", revision: first, token: token)
            let etag = try #require(try await harness.fetch(version: "2.1.3", token: token).headers[.eTag])
            let delivery = harness.deliveries[0]
            let fastAnswersBefore = try await ConfigFastPathTests.fastPathAnswers(delivery, route: "/v1/config/updates")
            // The tokens the streams open with: the fetched one, or ones this replica has never verified.
            var unseenTokens: [String] = []
            for _ in 0..<3 where opener == .router {
                unseenTokens.append(try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken)
            }
            func streamToken() -> String { opener == .fastPath ? token : unseenTokens.removeFirst() }

            let stream = try await EventReader(delivery: delivery, token: streamToken())
            #expect(stream.status == 200)
            let connected = try #require(try await stream.next())
            #expect(connected.event == "config" && connected.id == etag)
            let announced = try JSONSerialization.jsonObject(with: Data(connected.data.utf8)) as? [String: Any]
            #expect(announced?["etag"] as? String == etag)

            let second = try await harness.upload(["flag": 2], version: "2.*")
            try await harness.waitUntilServed(version: "2.1.3", revision: second, token: token)
            let newETag = try #require(try await harness.fetch(version: "2.1.3", token: token).headers[.eTag])
            #expect(newETag != etag)
            let changed = try #require(try await stream.next())
            #expect(changed.event == "config" && changed.id == newETag)

            // A reconnect naming what it holds is told nothing until something changes: the kill switch.
            let resumed = try await EventReader(delivery: delivery, token: streamToken(), lastEventID: newETag)
            try await harness.manage(.post, "kill-switch", ["versions": ["2.1.3"], "enabled": false, "reason": "Update now."])
            for reader in [stream, resumed] {
                let killed = try #require(try await reader.next())
                #expect(killed.event == "version_disabled" && killed.data == "{\"reason\":\"Update now.\"}")
                #expect(try await reader.next() == nil, "the stream ends after a kill switch")
            }

            // A stream opened on a switched-off version is refused as the config is, before any 200.
            let late = try await EventReader(delivery: delivery, token: streamToken())
            #expect(late.status == 403)
            #expect(try await late.body().contains(#""code":"version_disabled""#))

            if opener == .fastPath {
                // Other tests may add to the process's count: at least.
                let fastAnswers = try await ConfigFastPathTests.fastPathAnswers(delivery, route: "/v1/config/updates") - fastAnswersBefore
                #expect(fastAnswers >= 3, "streams opened by the fast path: \(fastAnswers)")
            }
        }
    }

    @Test("a scoped stream never cuts its scope on the event loop: the first open of a scope goes to the router, later ones park, and after a change the parked stream announces the new scoped ETag")
    func scopedStreams() async throws {
        try await DeliveryHarness.run { harness in
            let first = try await harness.upload(["features": ["a": 1], "other": 1], version: "2.*")
            let token = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken
            try await harness.waitUntilServed(version: "2.1.3", revision: first, token: token)
            _ = try await harness.fetch(version: "2.1.3", token: token)  // the token is remembered: the fast path may take it
            let delivery = harness.deliveries[0]
            let before = try await ConfigFastPathTests.fastPathAnswers(delivery, route: "/v1/config/updates")

            let routed = try await EventReader(delivery: delivery, token: token, scope: "features")
            #expect(routed.status == 200)
            let scopedETag = try #require(try await harness.fetch(version: "2.1.3", token: token, scope: "features").headers[.eTag])
            #expect(try await routed.next()?.id == scopedETag)
            #expect(try await ConfigFastPathTests.fastPathAnswers(delivery, route: "/v1/config/updates") == before, "the scope was not cut yet: the router opens it")

            let parked = try await EventReader(delivery: delivery, token: token, scope: "features")
            #expect(try await parked.next()?.id == scopedETag)
            #expect(try await ConfigFastPathTests.fastPathAnswers(delivery, route: "/v1/config/updates") >= before + 1, "the scope is cut now: the stream parks")

            // A new revision: its scope is cut off the event loop, then announced on both.
            let second = try await harness.upload(["features": ["a": 2], "other": 1], version: "2.*")
            try await harness.waitUntilServed(version: "2.1.3", revision: second, token: token)
            let newETag = try #require(try await harness.fetch(version: "2.1.3", token: token, scope: "features").headers[.eTag])
            #expect(newETag != scopedETag)
            for reader in [parked, routed] {
                var announced: String?
                while announced != newETag, let event = try await reader.next() { announced = event.id }
                #expect(announced == newETag)
            }
        }
    }

    @Test(
        "a revoked install's stream is refused and ended; a token that expires while its stream is open ends it with token_expired",
        arguments: Opener.allCases)
    func revocationAndExpiry(opener: Opener) async throws {
        try await DeliveryHarness.run { harness in
            let revision = try await harness.upload(["flag": 1], version: "*")
            let watcher = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken
            try await harness.waitUntilServed(version: "2.1.3", revision: revision, token: watcher)
            let delivery = harness.deliveries[0]
            /// Makes the replica verify `token` first (the app's fetch before its stream), for the fast path.
            func fetchFirst(_ token: String) async throws {
                if opener == .fastPath { #expect(try await harness.fetch(version: "2.1.3", token: token).status == .ok) }
            }

            let victim = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken
            try await fetchFirst(victim)
            let stream = try await EventReader(delivery: delivery, token: victim)
            #expect(try await stream.next()?.event == "config")
            let keyID = try #require(try TrustTierTests.claims(of: victim)["sub"] as? String)
            #expect(try await harness.manageReply(.post, "devices/revoke", ["keyId": keyID, "reason": "stolen"]).status == .ok)
            let refused = try #require(try await stream.next())
            #expect(refused.event == "refused" && refused.data.contains("\"status\":401") && refused.data.contains("\"code\":\"token_revoked\""), "\(refused)")
            #expect(try await stream.next() == nil)

            // A token issued 15 minutes less 5 seconds ago: the stream opens, then a tick after its expiry ends it.
            var expiring = ""
            try await harness.withSigningKeys { _, signer in
                let subject = TokenAuthority.Subject(keyID: "expiring-device", appID: DeliveryHarness.appID, environment: "production", appVersion: "2.1.3")
                expiring = try await signer.issueAccessToken(for: subject, now: Date().addingTimeInterval(-895)).token
            }
            try await fetchFirst(expiring)
            let ending = try await EventReader(delivery: delivery, token: expiring)
            #expect(try await ending.next()?.event == "config")
            let expired = try #require(try await ending.next())
            #expect(expired.event == "token_expired")
            #expect(try await ending.next() == nil)
        }
    }

    @Test("an install holds at most eight streams on a replica: the ninth is refused 429 too_many_streams, another install is not")
    func streamsPerInstall() async throws {
        try await DeliveryHarness.run { harness in
            let revision = try await harness.upload(["flag": 1], version: "*")
            let token = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken
            try await harness.waitUntilServed(version: "2.1.3", revision: revision, token: token)
            let delivery = harness.deliveries[0]
            var open: [EventReader] = []
            for _ in 0..<8 {
                let stream = try await EventReader(delivery: delivery, token: token)
                #expect(stream.status == 200)
                #expect(try await stream.next()?.event == "config")
                open.append(stream)
            }
            let ninth = try await EventReader(delivery: delivery, token: token)
            #expect(ninth.status == 429)
            #expect(try await ninth.body().contains(#""code":"too_many_streams""#))

            let other = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken
            let theirs = try await EventReader(delivery: delivery, token: other)
            #expect(theirs.status == 200)
            #expect(try await theirs.next()?.event == "config")
            #expect(open.count == 8)
        }
    }

    @Test("a stream is refused before 200 for a token an emergency revocation covers and for a revoked install, as /v1/config is", arguments: Opener.allCases)
    func gateBeforeOpening(opener: Opener) async throws {
        try await DeliveryHarness.run { harness in
            let revision = try await harness.upload(["flag": 1], version: "2.*")
            let covered = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken
            let stolen = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken
            try await harness.waitUntilServed(version: "2.1.3", revision: revision, token: covered)
            let delivery = harness.deliveries[0]
            if opener == .fastPath {
                for token in [covered, stolen] { #expect(try await harness.fetch(version: "2.1.3", token: token).status == .ok) }
            }
            let keyID = try #require(try TrustTierTests.claims(of: stolen)["sub"] as? String)
            try await harness.manage(.post, "devices/revoke", ["keyId": keyID, "reason": "stolen"])
            try await harness.manage(.post, "emergency-revoke", ["version": "2.*"])
            try await eventually("the revocation arrives") { try await harness.fetch(version: "2.1.3", token: covered).errorCode == "token_revoked" }

            let revoked = try await EventReader(delivery: delivery, token: covered)
            #expect(revoked.status == 401)
            #expect(try await revoked.body().contains(#""code":"token_revoked""#))
            let device = try await EventReader(delivery: delivery, token: stolen)
            #expect(device.status == 401 || device.status == 403, "status \(device.status)")
            #expect(try await device.body().contains("revoked"))
        }
    }

    @Test("300 opens at once with one token, across both replicas, admit at most 8 streams a replica; the rest are refused")
    func burstOfOneToken() async throws {
        try await DeliveryHarness.run { harness in
            let revision = try await harness.upload(["flag": 1], version: "*")
            let token = try await harness.app.attest(with: harness.auth, appVersion: "2.1.3").accessToken
            try await harness.waitUntilServed(version: "2.1.3", revision: revision, token: token)
            let statuses = try await withThrowingTaskGroup(of: (Int, EventReader?).self) { group in
                for index in 0..<300 {
                    let delivery = harness.deliveries[index % 2]
                    group.addTask {
                        let reader = try await EventReader(delivery: delivery, token: token)
                        // Admitted streams are held open until every open was answered.
                        return (reader.status, reader.status == 200 ? reader : nil)
                    }
                }
                var statuses: [Int] = []
                var held: [EventReader] = []
                for try await (status, reader) in group {
                    statuses.append(status)
                    if let reader { held.append(reader) }
                }
                #expect(held.count == statuses.filter { $0 == 200 }.count)
                return statuses
            }
            let admitted = statuses.filter { $0 == 200 }.count
            #expect(admitted >= 8 && admitted <= 16, "admitted \(admitted) of 300")
            #expect(statuses.allSatisfy { $0 == 200 || $0 == 429 }, "\(Set(statuses))")
        }
    }
}
