import AppAttestTesting
import Crypto
import Foundation
import HTTPTypes
import PostgresNIO
import SesameDomain
import SesameTestSupport
import Testing

/// A refresh reply lost in flight (the app suspended, the network gone after auth rotated): the
/// token just before the current one, presented again with the family key's assertion inside the
/// grace window, rotates the family once more instead of revoking it; every other reuse revokes.
@Suite("Auth: the refresh grace window for a lost reply", .timeLimit(.minutes(2)))
struct RefreshGraceTests {
    /// An attested install whose first refresh reply was "lost": the token it still holds, the
    /// pair auth issued that never arrived, and its key.
    static func lostReply(_ harness: AuthHarness) async throws -> (held: String, lost: String, key: SoftwareAttester.DeviceKey) {
        let (key, attested) = try await harness.attestNewKey()
        let held = try #require(attested["refreshToken"])
        let lost = try await harness.refresh(held, extra: try await harness.assertionFields(key, counter: 1))
        #expect(lost.status == .ok, "\(lost.json)")
        return (held, try #require(lost["refreshToken"]), key)
    }

    static func familyRevoked(_ harness: AuthHarness) async throws -> Bool {
        for try await revoked in try await harness.database.query("SELECT revoked_at IS NOT NULL FROM refresh_token_families").decode(Bool.self) {
            return revoked
        }
        return false
    }

    @Test("the held token with an assertion rotates again, and the device goes on from the new pair (the lost pair: lostPairRefused)")
    func lostReplyRecovers() async throws {
        try await AuthHarness.run { harness in
            let (held, _, key) = try await Self.lostReply(harness)
            let recovered = try await harness.refresh(held, extra: try await harness.assertionFields(key, counter: 2))
            #expect(recovered.status == .ok, "\(recovered.json)")
            let current = try #require(recovered["refreshToken"])
            // Rotated from the family's current generation, and noted as a grace rotation.
            for try await (generation, grace) in try await harness.database.query(
                "SELECT generation, grace_generation FROM refresh_token_families"
            ).decode((Int64, Int64?).self) {
                #expect(generation == 2 && grace == 2)
            }
            // The device goes on from the recovered pair.
            let next = try await harness.refresh(current, extra: try await harness.assertionFields(key, counter: 3))
            #expect(next.status == .ok, "\(next.json)")
            #expect(try await !Self.familyRevoked(harness))
        }
    }

    @Test("the lost pair presented after the grace rotation is a reuse: the family is revoked")
    func lostPairRefused() async throws {
        try await AuthHarness.run { harness in
            let (held, lost, key) = try await Self.lostReply(harness)
            let recovered = try await harness.refresh(held, extra: try await harness.assertionFields(key, counter: 2))
            #expect(recovered.status == .ok, "\(recovered.json)")
            let replayed = try await harness.refresh(lost, extra: try await harness.assertionFields(key, counter: 3))
            #expect(replayed.errorCode == "refresh_token_reused", "\(replayed.json)")
            #expect(try await Self.familyRevoked(harness))
        }
    }

    @Test("a second reuse of the held token (two generations back by then) revokes")
    func secondReuse() async throws {
        try await AuthHarness.run { harness in
            let (held, _, key) = try await Self.lostReply(harness)
            #expect(try await harness.refresh(held, extra: try await harness.assertionFields(key, counter: 2)).status == .ok)
            let again = try await harness.refresh(held, extra: try await harness.assertionFields(key, counter: 3))
            #expect(again.errorCode == "refresh_token_reused", "\(again.json)")
            #expect(try await Self.familyRevoked(harness))
        }
    }

    @Test("the held token without an assertion, or with another key's, is a reuse: the family is revoked")
    func noOrForeignAssertion() async throws {
        try await AuthHarness.run { harness in
            let (held, _, _) = try await Self.lostReply(harness)
            let bare = try await harness.refresh(held)
            #expect(bare.errorCode == "refresh_token_reused", "\(bare.json)")
            #expect(try await Self.familyRevoked(harness))
        }
        try await AuthHarness.run { harness in
            let (held, _, _) = try await Self.lostReply(harness)
            let thief = harness.attester.generateKey()
            let foreign = try await harness.refresh(held, extra: try await harness.assertionFields(thief, counter: 9))
            #expect(foreign.errorCode == "refresh_token_reused", "\(foreign.json)")
            #expect(try await Self.familyRevoked(harness))
        }
    }

    @Test("in the grace window the held token with a malformed assertion or clientData, an unknown challenge, or a counter that does not advance is a reuse: the family is revoked")
    func everyGraceRefusalRevokes() async throws {
        let spoiled: [(String, @Sendable (AuthHarness, SoftwareAttester.DeviceKey) async throws -> [String: Any])] = [
            ("a malformed assertion", { harness, key in
                var fields = try await harness.assertionFields(key, counter: 2)
                fields["assertion"] = "not base64 !"
                return fields
            }),
            ("malformed clientData", { harness, key in
                var fields = try await harness.assertionFields(key, counter: 2)
                fields["clientData"] = Data("not json".utf8).base64EncodedString()
                return fields
            }),
            ("an unknown challenge", { harness, key in
                let clientData = try JSONSerialization.data(withJSONObject: ["challenge": Data(repeating: 7, count: 32).base64EncodedString()])
                let assertion = try harness.attester.assert(
                    key, clientDataHash: Array(SHA256.hash(data: clientData)), appId: AuthHarness.appID, counter: 2)
                return ["assertion": Data(assertion).base64EncodedString(), "clientData": clientData.base64EncodedString()]
            }),
            ("a counter that does not advance", { harness, key in try await harness.assertionFields(key, counter: 1) }),
        ]
        for (what, fields) in spoiled {
            try await AuthHarness.run { harness in
                let (held, _, key) = try await Self.lostReply(harness)
                let refused = try await harness.refresh(held, extra: try await fields(harness, key))
                #expect(refused.errorCode == "refresh_token_reused", "\(what): \(refused.json)")
                #expect(try await Self.familyRevoked(harness), "\(what)")
            }
        }
    }

    @Test("after the grace window the held token is a reuse, assertion or not")
    func afterTheWindow() async throws {
        try await AuthHarness.run { harness in
            let (held, _, key) = try await Self.lostReply(harness)
            try await harness.database.query("UPDATE refresh_token_families SET rotated_at = now() - interval '601 seconds'")
            let late = try await harness.refresh(held, extra: try await harness.assertionFields(key, counter: 2))
            #expect(late.errorCode == "refresh_token_reused", "\(late.json)")
            #expect(try await Self.familyRevoked(harness))
        }
    }

    @Test("just inside the window the held token still recovers")
    func insideTheWindow() async throws {
        try await AuthHarness.run { harness in
            let (held, _, key) = try await Self.lostReply(harness)
            try await harness.database.query("UPDATE refresh_token_families SET rotated_at = now() - interval '590 seconds'")
            #expect(try await harness.refresh(held, extra: try await harness.assertionFields(key, counter: 2)).status == .ok)
        }
    }
}
