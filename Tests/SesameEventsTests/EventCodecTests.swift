import Foundation
import SesameEvents
import Testing

@Suite("Event payloads")
struct EventCodecTests {
    static let everyEvent: [SesameEvent] = [
        .configPublished(ConfigPublished(pattern: "2.*", revision: 7, zeroKnowledge: false)),
        .configDeleted(ConfigDeleted(patterns: ["*", "2.1.3"])),
        .configRolledBack(ConfigRolledBack(pattern: "*", revision: 3, previousRevision: 5)),
        .provisioningKeyRevoked(ProvisioningKeyRevoked(keyID: "key_1a2b")),
        .killSwitchChanged(KillSwitchChanged(versions: ["2.1.3"], enabled: false, reason: "crash on launch")),
        .emergencyRevocation(
            EmergencyRevocation(versionPattern: "2.*", revokedBefore: Date(timeIntervalSince1970: 1_790_000_000.125), forceRefreshTTL: 60)),
        .attestedKeyRevoked(AttestedKeyRevoked(keyID: "bXkta2V5")),
        .signingKeyRotated(SigningKeyRotated(kid: "2026-11-22")),
        .appPolicyChanged(AppPolicyChanged(fields: ["identityIssuer"])),
        .pinsChanged(PinsChanged(change: "added")),
    ]

    @Test("every event survives a round trip, dates to the millisecond", arguments: everyEvent)
    func roundTrip(event: SesameEvent) throws {
        let envelope = EventEnvelope(appID: "TEAMID.com.example.app", occurredAt: Date(timeIntervalSince1970: 1_790_000_123.456), event: event)
        let decoded = try EventCodec.decode(EventCodec.encode(envelope))
        #expect(decoded.id == envelope.id)
        #expect(decoded.appID == envelope.appID)
        #expect(decoded.event == envelope.event)
        #expect(abs(decoded.occurredAt.timeIntervalSince(envelope.occurredAt)) < 0.001)
    }

    @Test("config events travel on the config topic, the rest on revocations, keyed by app")
    func topicsAndKeys() {
        let published = EventEnvelope(appID: "T.app", event: Self.everyEvent[0])
        #expect(published.topic == EventTopic.configChanges)
        #expect(published.partitionKey == "T.app")
        let rotated = EventEnvelope(appID: nil, event: .signingKeyRotated(SigningKeyRotated(kid: "k")))
        #expect(rotated.topic == EventTopic.revocations)
        #expect(rotated.partitionKey == EventEnvelope.globalKey)
    }

    @Test("the JSON says type and major version")
    func layout() throws {
        let bytes = EventCodec.encode(EventEnvelope(appID: "T.app", event: Self.everyEvent[0]))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(object["type"] as? String == "config.published")
        #expect(object["version"] as? Int == 1)
        #expect((object["data"] as? [String: Any])?["revision"] as? Int == 7)
    }

    @Test("a newer major version is refused as such")
    func newerMajorVersion() throws {
        var object = try JSONSerialization.jsonObject(with: Data(EventCodec.encode(EventEnvelope(appID: "T.app", event: Self.everyEvent[0])))) as! [String: Any]
        object["version"] = 2
        let bytes = Array(try JSONSerialization.data(withJSONObject: object))
        #expect(throws: EventDecodingError.unsupportedVersion(2)) { try EventCodec.decode(bytes) }

        // Even when the rest of the layout changed too.
        #expect(throws: EventDecodingError.unsupportedVersion(3)) { try EventCodec.decode(Array(#"{"version":3,"kind":"x"}"#.utf8)) }
    }

    @Test("added fields are ignored (a minor version), an unknown type is named")
    func forwardCompatibility() throws {
        var object = try JSONSerialization.jsonObject(with: Data(EventCodec.encode(EventEnvelope(appID: "T.app", event: Self.everyEvent[0])))) as! [String: Any]
        object["newField"] = "ignored"
        var data = object["data"] as! [String: Any]
        data["alsoNew"] = 1
        object["data"] = data
        let decoded = try EventCodec.decode(Array(try JSONSerialization.data(withJSONObject: object)))
        #expect(decoded.event == Self.everyEvent[0])

        object["type"] = "config.teleported"
        #expect(throws: EventDecodingError.unknownType("config.teleported")) {
            try EventCodec.decode(Array(try JSONSerialization.data(withJSONObject: object)))
        }
    }

    @Test("malformed input is an error, never a crash", arguments: [
        "", "not json", "[]", "{}", #"{"version":1}"#, #"{"type":"config.published","version":1}"#,
        #"{"type":"config.published","version":1,"id":"00000000-0000-0000-0000-000000000000","occurredAt":"2026-01-01T00:00:00.000Z"}"#,
        #"{"type":"config.published","version":1,"id":"00000000-0000-0000-0000-000000000000","occurredAt":"yesterday","data":{}}"#,
        #"{"type":"config.published","version":1,"id":"nope","occurredAt":"2026-01-01T00:00:00.000Z","data":{}}"#,
        #"{"type":"config.published","version":1,"id":"00000000-0000-0000-0000-000000000000","occurredAt":"2026-01-01T00:00:00.000Z","data":{"pattern":1}}"#,
    ])
    func malformed(text: String) {
        #expect {
            try EventCodec.decode(Array(text.utf8))
        } throws: { error in
            guard let error = error as? EventDecodingError, case .malformed = error else { return false }
            return true
        }
    }
}
