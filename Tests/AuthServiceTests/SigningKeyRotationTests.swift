import Foundation
import HTTPTypes
import JWTKit
import Logging
import PostgresNIO
import SesameConfiguration
import SesameEvents
import SesameKafka
import SesameTestSupport
import SesameTokens
import Testing

/// Token signing keys: published before they sign, rotated on a schedule and on command, the old
/// key verifying until its tokens expire (or not at all, when revoked).
@Suite("Auth signing key rotation", .timeLimit(.minutes(3)))
struct SigningKeyRotationTests {
    let logger = Logger(label: "test")

    @Test("a scheduled rotation publishes the new key first, signs with it from its activation, and the old key's tokens still work")
    func stagedRotation() async throws {
        try await AuthHarness.run { harness in
            let (_, before) = try await harness.attestNewKey()
            let oldAccess = try #require(before["accessToken"])
            try await harness.withTokenStore { store in
                let signer = TokenAuthority(store: store, signs: true, logger: logger)
                let oldKid = try #require(try await signer.signingKeyID())

                // Not due: the current key is younger than the interval.
                #expect(try await store.rotateIfDue(every: .seconds(3600), activatingAfter: .seconds(600), verifyRetiredFor: .seconds(7200)) == nil)
                try await harness.database.query("UPDATE signing_keys SET activates_at = now() - interval '2 hours'")
                let rotation = try #require(
                    try await store.rotateIfDue(every: .seconds(3600), activatingAfter: .seconds(600), verifyRetiredFor: .seconds(7200)))
                // A successor is already waiting: no second rotation.
                #expect(try await store.rotateIfDue(every: .seconds(3600), activatingAfter: .seconds(600), verifyRetiredFor: .seconds(7200)) == nil)
                #expect(rotation.activatesAt.timeIntervalSinceNow > 590)
                #expect(rotation.previousVerifyUntil.timeIntervalSince(rotation.activatesAt) > 7190)

                // Published at once, but the old key signs until the handover.
                try await signer.reload()
                #expect(try await signer.jwks().keys.compactMap(\.keyIdentifier?.string).sorted() == [oldKid, rotation.kid].sorted())
                #expect(try await signer.signingKeyID() == oldKid)
                #expect(try await signer.signingKeyID(now: rotation.activatesAt.addingTimeInterval(1)) == rotation.kid)

                // The live service publishes it too once it reloads (here: within its unknown-kid reload).
                // This rotation's event (the first key's, made at start, may still be there too: CI saw it).
                let announced = try await harness.database.query(
                    "SELECT count(*) FROM outbox WHERE convert_from(payload, 'UTF8') LIKE '%signing_key.rotated%' AND convert_from(payload, 'UTF8') LIKE '%' || \(rotation.kid) || '%'")
                for try await count in announced.decode(Int.self) { #expect(count == 1) }

                // After the handover: new tokens carry the new kid; the old key's tokens still verify and refresh.
                try await harness.database.query("UPDATE signing_keys SET activates_at = now() - interval '1 second' WHERE kid = \(rotation.kid)")
                try await harness.database.query("UPDATE signing_keys SET retired_at = now() - interval '1 second' WHERE kid = \(oldKid)")
                let verifier = TokenAuthority(store: store, signs: false, logger: logger)
                #expect(try await verifier.verifyAccessToken(oldAccess).appID == AuthHarness.appID)
                try await signer.reload()
                #expect(try await signer.signingKeyID() == rotation.kid)
                #expect(try await harness.refresh(try #require(before["refreshToken"])).status == .ok)

                // Once its verification window has passed, the old key's tokens are refused.
                try await harness.database.query("UPDATE signing_keys SET verify_until = now() - interval '1 second' WHERE kid = \(oldKid)")
                let later = TokenAuthority(store: store, signs: false, logger: logger)
                await #expect(throws: TokenError.self) { try await later.verifyAccessToken(oldAccess) }
                #expect(try await later.jwks().keys.map(\.keyIdentifier?.string) == [rotation.kid])
            }
        }
    }

    @Test("when the key that signs now began signing, and how long a key signs, are exported for the overdue-rotation alert")
    func signingKeyAgeExported() async throws {
        try await AuthHarness.run { harness in
            try await harness.withTokenStore { store in
                let lifetimes = harness.configuration.tokenLifetimes
                let signer = TokenAuthority(store: store, lifetimes: lifetimes, signs: true, logger: logger)
                try await signer.reload()  // the first key is made on first use
                try await harness.database.query("UPDATE signing_keys SET activates_at = now() - interval '2 hours' WHERE retired_at IS NULL")
                // The service's own reloads write the same key's time (one database), so any reload
                // after the update says two hours ago.
                try await eventually("the gauge says the key began signing two hours ago") {
                    try await signer.reload()
                    let (_, body) = try await harness.get("/metrics")
                    let text = String(decoding: body, as: UTF8.self)
                    guard let activated = MetricsText.value("sesame_auth_signing_key_activated_timestamp_seconds", in: text) else { return false }
                    return abs(Date().timeIntervalSince1970 - 7200 - activated) < 60
                }
                let (_, body) = try await harness.get("/metrics")
                #expect(
                    MetricsText.value("sesame_auth_signing_key_rotation_seconds", in: String(decoding: body, as: UTF8.self))
                        == Double(lifetimes.signingKeyRotation.wholeSeconds))
            }
        }
    }

    @Test("an immediate rotation signs with the new key at once; the old key keeps verifying")
    func immediateRotation() async throws {
        try await AuthHarness.run { harness in
            let (_, before) = try await harness.attestNewKey()
            try await harness.withTokenStore { store in
                let rotation = try await store.rotate(activatingAfter: .zero, verifyRetiredFor: .seconds(7200))
                let signer = TokenAuthority(store: store, signs: true, logger: logger)
                #expect(try await signer.signingKeyID() == rotation.kid)
                let verifier = TokenAuthority(store: store, signs: false, logger: logger)
                #expect(try await verifier.verifyAccessToken(try #require(before["accessToken"])).appID == AuthHarness.appID)
            }
        }
    }

    @Test("revoking the previous key refuses its tokens everywhere, once the rotation event reaches the service")
    func revokePrevious() async throws {
        try await AuthHarness.run { harness in
            let (_, before) = try await harness.attestNewKey()
            let kafka = KafkaConfiguration(brokers: try TestKafka.brokers(), idempotentDelivery: false)
            try await KafkaTopicAdministrator(configuration: kafka).ensureTopics([EventTopic.revocations], partitions: 1)
            try await harness.withTokenStore { store in
                let rotation = try await store.rotate(activatingAfter: .zero, verifyRetiredFor: nil)
                let verifier = TokenAuthority(store: store, signs: false, logger: logger)
                await #expect(throws: TokenError.self) { try await verifier.verifyAccessToken(try #require(before["accessToken"])) }

                // The live service still holds the old key until the event (the admin relay's job,
                // played here by a producer) tells it to reload: its 60-second maintenance round is
                // far away. The event is sent again until the service's consumer has seen one.
                let producer = try KafkaProducer(configuration: kafka, logger: logger)
                try await withRunningServices([producer]) {
                    try await eventually(timeout: .seconds(60), "the service reloads its keys") {
                        let event = EventEnvelope(appID: nil, event: .signingKeyRotated(SigningKeyRotated(kid: rotation.kid)))
                        _ = try await producer.send(topic: EventTopic.revocations, key: "signing-keys", value: EventCodec.encode(event))
                        try await Task.sleep(for: .milliseconds(500))
                        let (_, body) = try await harness.get("/v1/auth/jwks")
                        return String(decoding: body, as: UTF8.self).contains(rotation.kid)
                    }
                }
                #expect(try await harness.refresh(try #require(before["refreshToken"])).errorCode == "invalid_token")
                // Attesting again works, with the new key.
                let (_, after) = try await harness.attestNewKey()
                #expect(try await verifier.verifyAccessToken(try #require(after["accessToken"])).appID == AuthHarness.appID)
            }
        }
    }

    @Test("a verifier learns a new key from the first token naming it, waiting for its next reload (at most one a second); a failed reload refuses the token")
    func unknownKeyReload() async throws {
        try await AuthHarness.run { harness in
            try await harness.withTokenStore { store in
                let subject = TokenAuthority.Subject(keyID: "device", appID: AuthHarness.appID, environment: "production", appVersion: nil)
                let signer = TokenAuthority(store: store, signs: true, logger: logger)
                let verifier = TokenAuthority(store: store, signs: false, logger: logger)
                // The reload starts after this instant.
                let loadStarted = ContinuousClock.now
                _ = try await verifier.jwks()

                _ = try await store.rotate(activatingAfter: .zero, verifyRetiredFor: .seconds(7200))
                try await signer.reload()
                let newKeyToken = try await signer.issue(for: subject, family: UUID(), generation: 1).accessToken
                // Within a second of its last reload the verifier does not go to the database again:
                // the token waits for the next reload it may make, and is accepted then.
                let generation = verifier.keySetGeneration.current
                #expect(try await verifier.verifyAccessToken(newKeyToken).appID == AuthHarness.appID)
                #expect(ContinuousClock.now - loadStarted >= .seconds(1))
                #expect(verifier.keySetGeneration.current > generation)

                // A verifier whose database has gone: the reload fails, and the token naming a key it
                // does not know is refused as a token error, promptly — not a database error.
                var stranded: TokenAuthority?
                try await harness.withTokenStore { ownStore in
                    stranded = TokenAuthority(store: ownStore, signs: false, logger: logger)
                    _ = try await stranded?.jwks()
                }
                _ = try await store.rotate(activatingAfter: .zero, verifyRetiredFor: .seconds(7200))
                try await signer.reload()
                let newerKeyToken = try await signer.issue(for: subject, family: UUID(), generation: 1).accessToken
                try await Task.sleep(for: .milliseconds(1100))
                let started = ContinuousClock.now
                await #expect(throws: TokenError.self) { try await stranded?.verifyAccessToken(newerKeyToken) }
                #expect(ContinuousClock.now - started < .seconds(5))
            }
        }
    }
}
