import Foundation
import SesameEvents
import Testing

@Suite("Event payloads")
struct EventCodecTests {
    static let everyEvent: [SesameEvent] = [.appChanged, .signingKeyRotated(SigningKeyRotated(kid: "2026-11-22"))]
    static let rotated = everyEvent[1]

    @Test("every event survives a round trip, dates to the millisecond", arguments: everyEvent)
    func roundTrip(event: SesameEvent) throws {
        let envelope = EventEnvelope(appID: "TEAMID.com.example.app", occurredAt: Date(timeIntervalSince1970: 1_790_000_123.456), event: event)
        let decoded = try EventCodec.decode(EventCodec.encode(envelope))
        #expect(decoded.id == envelope.id)
        #expect(decoded.appID == envelope.appID)
        #expect(decoded.event == envelope.event)
        #expect(abs(decoded.occurredAt.timeIntervalSince(envelope.occurredAt)) < 0.001)
    }

    @Test("app changes travel on the config topic keyed by app, key rotations on revocations")
    func topicsAndKeys() {
        let changed = EventEnvelope(appID: "T.app", event: .appChanged)
        #expect(changed.topic == EventTopic.configChanges)
        #expect(changed.partitionKey == "T.app")
        let rotated = EventEnvelope(appID: nil, event: Self.rotated)
        #expect(rotated.topic == EventTopic.revocations)
        #expect(rotated.partitionKey == EventEnvelope.globalKey)
    }

    @Test("the JSON says type and major version; an app change carries the app id and nothing else")
    func layout() throws {
        let changed = try #require(
            try JSONSerialization.jsonObject(with: Data(EventCodec.encode(EventEnvelope(appID: "T.app", event: .appChanged)))) as? [String: Any])
        #expect(changed["type"] as? String == "app.changed")
        #expect(changed["version"] as? Int == 1)
        #expect(changed["appId"] as? String == "T.app")
        #expect((changed["data"] as? [String: Any])?.isEmpty == true)
        let rotated = try #require(
            try JSONSerialization.jsonObject(with: Data(EventCodec.encode(EventEnvelope(appID: nil, event: Self.rotated)))) as? [String: Any])
        #expect((rotated["data"] as? [String: Any])?["kid"] as? String == "2026-11-22")
    }

    @Test("what earlier versions published for one app's changes is read as app.changed", arguments: [
        "config.published", "config.deleted", "config.rolled_back", "provisioning_key.revoked", "kill_switch.changed",
        "emergency_revocation", "attested_key.revoked", "app_policy.changed", "pins.changed",
    ])
    func formerTypes(type: String) throws {
        let text = #"{"type":"\#(type)","version":1,"id":"00000000-0000-0000-0000-000000000001","appId":"T.app","occurredAt":"2026-01-01T00:00:00.000Z","data":{"pattern":"*","revision":3}}"#
        let decoded = try EventCodec.decode(Array(text.utf8))
        #expect(decoded.event == .appChanged)
        #expect(decoded.appID == "T.app")
    }

    @Test("a newer major version is refused as such")
    func newerMajorVersion() throws {
        var object = try JSONSerialization.jsonObject(with: Data(EventCodec.encode(EventEnvelope(appID: nil, event: Self.rotated)))) as! [String: Any]
        object["version"] = 2
        let bytes = Array(try JSONSerialization.data(withJSONObject: object))
        #expect(throws: EventDecodingError.unsupportedVersion(2)) { try EventCodec.decode(bytes) }

        // Even when the rest of the layout changed too.
        #expect(throws: EventDecodingError.unsupportedVersion(3)) { try EventCodec.decode(Array(#"{"version":3,"kind":"x"}"#.utf8)) }
    }

    @Test("added fields are ignored (a minor version), an unknown type is named")
    func forwardCompatibility() throws {
        var object = try JSONSerialization.jsonObject(with: Data(EventCodec.encode(EventEnvelope(appID: nil, event: Self.rotated)))) as! [String: Any]
        object["newField"] = "ignored"
        var data = object["data"] as! [String: Any]
        data["alsoNew"] = 1
        object["data"] = data
        let decoded = try EventCodec.decode(Array(try JSONSerialization.data(withJSONObject: object)))
        #expect(decoded.event == Self.rotated)

        object["type"] = "config.teleported"
        #expect(throws: EventDecodingError.unknownType("config.teleported")) {
            try EventCodec.decode(Array(try JSONSerialization.data(withJSONObject: object)))
        }
    }

    @Test("malformed input is an error, never a crash", arguments: [
        "", "not json", "[]", "{}", #"{"version":1}"#, #"{"type":"app.changed","version":1}"#,
        #"{"type":"signing_key.rotated","version":1,"id":"00000000-0000-0000-0000-000000000000","occurredAt":"2026-01-01T00:00:00.000Z"}"#,
        #"{"type":"app.changed","version":1,"id":"00000000-0000-0000-0000-000000000000","occurredAt":"yesterday","data":{}}"#,
        #"{"type":"app.changed","version":1,"id":"nope","occurredAt":"2026-01-01T00:00:00.000Z","data":{}}"#,
        #"{"type":"signing_key.rotated","version":1,"id":"00000000-0000-0000-0000-000000000000","occurredAt":"2026-01-01T00:00:00.000Z","data":{"kid":1}}"#,
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
