import Foundation

/// Turns envelopes into versioned JSON and back.
///
/// Layout: `{"type", "version", "id", "appId", "occurredAt", "data"}`; `data` holds the event's
/// own fields. Dates are ISO 8601 with fractional seconds.
public enum EventCodec {
    /// The JSON bytes of `envelope`.
    public static func encode(_ envelope: EventEnvelope) -> [UInt8] {
        let wire = WireEnvelope(
            type: envelope.event.type, version: EventEnvelope.majorVersion, id: envelope.id, appId: envelope.appID,
            occurredAt: envelope.occurredAt)
        // Encoding these plain structs cannot fail; a failure would be a programming error.
        let encoded = try! encoder.encode(EncodableWire(wire: wire, event: envelope.event))
        return Array(encoded)
    }

    /// The envelope in `bytes`, or why there is none.
    public static func decode(_ bytes: [UInt8]) throws(EventDecodingError) -> EventEnvelope {
        let data = Data(bytes)
        let header: WireEnvelope
        do {
            header = try decoder.decode(WireEnvelope.self, from: data)
        } catch {
            // Check the version first so a newer layout is reported as such, not as malformed.
            if let version = try? decoder.decode(VersionOnly.self, from: data).version, version != EventEnvelope.majorVersion {
                throw .unsupportedVersion(version)
            }
            throw .malformed("envelope: \(describe(error))")
        }
        guard header.version == EventEnvelope.majorVersion else { throw .unsupportedVersion(header.version) }
        let event: SesameEvent
        do {
            event = try decodeEvent(type: header.type, from: data)
        } catch let error as EventDecodingError {
            throw error
        } catch {
            throw .malformed("\(header.type): \(describe(error))")
        }
        return EventEnvelope(id: header.id, appID: header.appId, occurredAt: header.occurredAt, event: event)
    }

    private static func decodeEvent(type: String, from data: Data) throws -> SesameEvent {
        func payload<Payload: Decodable>(_: Payload.Type) throws -> Payload {
            try decoder.decode(DataOnly<Payload>.self, from: data).data
        }
        switch type {
        case SesameEvent.appChangedType: return .appChanged
        case "signing_key.rotated": return .signingKeyRotated(try payload(SigningKeyRotated.self))
        case _ where SesameEvent.formerAppChangeTypes.contains(type): return .appChanged
        default: throw EventDecodingError.unknownType(String(type.prefix(64)))
        }
    }

    /// A decoding error's shape without echoing payload contents.
    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "missing \(key.stringValue)"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "wrong type at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        case DecodingError.dataCorrupted(let context):
            context.codingPath.isEmpty ? "not JSON" : "bad value at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        default: "undecodable"
        }
    }

    private struct WireEnvelope: Codable {
        var type: String
        var version: Int
        var id: UUID
        var appId: String?
        var occurredAt: Date
    }

    private struct VersionOnly: Decodable {
        var version: Int
    }

    private struct DataOnly<Payload: Decodable>: Decodable {
        var data: Payload
    }

    private struct EncodableWire: Encodable {
        var wire: WireEnvelope
        var event: SesameEvent

        enum CodingKeys: String, CodingKey { case data }

        func encode(to encoder: any Encoder) throws {
            try wire.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            switch event {
            case .appChanged: try container.encode([String: String](), forKey: .data)
            case .signingKeyRotated(let payload): try container.encode(payload, forKey: .data)
            }
        }
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(date.formatted(timestampStyle))
        }
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = try? timestampStyle.parse(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an ISO 8601 timestamp")
            }
            return date
        }
        return decoder
    }()

    private static let timestampStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
}
