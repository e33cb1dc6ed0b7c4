/// A decoded CBOR data item: the subset App Attest uses (RFC 8949 major types 0–5).
public indirect enum CBORValue: Equatable, Sendable {
    /// Major type 0.
    case unsigned(UInt64)
    /// Major type 1: the value is `-1 - n`; `n` is stored so that every encodable value fits.
    case negative(UInt64)
    /// Major type 2.
    case bytes([UInt8])
    /// Major type 3.
    case text(String)
    /// Major type 4.
    case array([CBORValue])
    /// Major type 5, entries in encoded order.
    case map([CBORMapEntry])

    /// The value for text key `key`, when this is a map.
    public subscript(key: String) -> CBORValue? {
        guard case .map(let entries) = self else { return nil }
        return entries.first { $0.key == .text(key) }?.value
    }

    /// The value for integer key `key`, when this is a map (COSE keys use integer labels).
    public subscript(integerKey key: Int) -> CBORValue? {
        guard case .map(let entries) = self else { return nil }
        let encoded: CBORValue = key >= 0 ? .unsigned(UInt64(key)) : .negative(UInt64(-1 - key))
        return entries.first { $0.key == encoded }?.value
    }

    /// The bytes, when this is a byte string.
    public var byteString: [UInt8]? {
        if case .bytes(let bytes) = self { return bytes }
        return nil
    }

    /// The string, when this is a text string.
    public var textString: String? {
        if case .text(let text) = self { return text }
        return nil
    }

    /// The elements, when this is an array.
    public var arrayElements: [CBORValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }
}

/// One key–value pair of a CBOR map.
public struct CBORMapEntry: Equatable, Sendable {
    /// The key.
    public let key: CBORValue
    /// The value.
    public let value: CBORValue

    /// Creates an entry.
    public init(key: CBORValue, value: CBORValue) {
        self.key = key
        self.value = value
    }
}
