import Foundation

/// A UUID written in its canonical lower-case form (RFC 9562, section 4), as the audit log and
/// webhooks write it; Foundation's `Codable` conformance writes upper case. Either case is read.
@propertyWrapper
public struct LowercaseUUID: Codable, Hashable, Sendable {
    public var wrappedValue: UUID

    public init(wrappedValue: UUID) {
        self.wrappedValue = wrappedValue
    }

    public init(from decoder: any Decoder) throws {
        wrappedValue = try decoder.singleValueContainer().decode(UUID.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(wrappedValue.uuidString.lowercased())
    }
}

/// An optional `LowercaseUUID`: left out when nil, absent when read as nil.
@propertyWrapper
public struct LowercaseOptionalUUID: Codable, Hashable, Sendable {
    public var wrappedValue: UUID?

    public init(wrappedValue: UUID?) {
        self.wrappedValue = wrappedValue
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try container.decode(UUID.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue.uuidString.lowercased()) } else { try container.encodeNil() }
    }
}

extension KeyedDecodingContainer {
    /// Synthesized `Decodable` calls this for a `@LowercaseOptionalUUID` member: a missing key is nil.
    public func decode(_ type: LowercaseOptionalUUID.Type, forKey key: Key) throws -> LowercaseOptionalUUID {
        try decodeIfPresent(type, forKey: key) ?? LowercaseOptionalUUID(wrappedValue: nil)
    }
}

extension KeyedEncodingContainer {
    /// Synthesized `Encodable` calls this for a `@LowercaseOptionalUUID` member: nil is left out,
    /// as an optional member is.
    public mutating func encode(_ value: LowercaseOptionalUUID, forKey key: Key) throws {
        guard value.wrappedValue != nil else { return }
        try encodeIfPresent(value, forKey: key)
    }
}
