/// Why bytes are not acceptable CBOR. Decoding never traps: every problem is one of these.
public enum CBORError: Error, Equatable, Sendable {
    /// The input ended inside an item.
    case truncated
    /// A major type, additional-information value or simple value this decoder does not accept
    /// (tags, floats, indefinite lengths, reserved values).
    case unsupported(UInt8)
    /// Nesting deeper than the limit.
    case tooDeep
    /// A length larger than the remaining input (or than the limits allow).
    case lengthOutOfRange
    /// A text string that is not valid UTF-8.
    case invalidUTF8
    /// Bytes left over after the item.
    case trailingBytes
    /// A map with the same key twice.
    case duplicateKey
}

/// A small, strict CBOR decoder for App Attest: definite-length items of major types 0–5 only.
///
/// Bounded by construction: every declared length and count is checked against the bytes that
/// remain before anything is allocated, and nesting is limited, so hostile input costs at most
/// linear work and memory.
public struct CBORDecoder: Sendable {
    /// The deepest nesting accepted.
    public var maxDepth: Int
    /// The most elements an array, or entries a map, may have (keeps duplicate-key checks cheap).
    public var maxCount: Int

    /// Creates a decoder with nesting and collection-size limits.
    public init(maxDepth: Int = 16, maxCount: Int = 256) {
        self.maxDepth = maxDepth
        self.maxCount = maxCount
    }

    /// Decodes exactly one item that spans all of `bytes`.
    public func decode(_ bytes: [UInt8]) throws(CBORError) -> CBORValue {
        let (value, consumed) = try decodePrefix(bytes[...])
        guard consumed == bytes.count else { throw .trailingBytes }
        return value
    }

    /// Decodes one item at the start of `bytes`, returning it and how many bytes it took.
    public func decodePrefix(_ bytes: ArraySlice<UInt8>) throws(CBORError) -> (CBORValue, Int) {
        var reader = Reader(bytes: bytes)
        let value = try readItem(&reader, depth: 0)
        return (value, reader.offset - bytes.startIndex)
    }

    private struct Reader {
        let bytes: ArraySlice<UInt8>
        var offset: Int

        init(bytes: ArraySlice<UInt8>) {
            self.bytes = bytes
            self.offset = bytes.startIndex
        }

        var remaining: Int { bytes.endIndex - offset }

        mutating func byte() throws(CBORError) -> UInt8 {
            guard offset < bytes.endIndex else { throw .truncated }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func take(_ count: Int) throws(CBORError) -> ArraySlice<UInt8> {
            guard count >= 0, count <= remaining else { throw .lengthOutOfRange }
            defer { offset += count }
            return bytes[offset..<offset + count]
        }
    }

    private func readArgument(_ reader: inout Reader, info: UInt8, initial: UInt8) throws(CBORError) -> UInt64 {
        switch info {
        case 0..<24: return UInt64(info)
        case 24...27:
            let width = 1 << Int(info - 24)
            guard reader.remaining >= width else { throw .truncated }
            var value: UInt64 = 0
            for byte in try reader.take(width) { value = value << 8 | UInt64(byte) }
            return value
        default: throw .unsupported(initial)
        }
    }

    private func readItem(_ reader: inout Reader, depth: Int) throws(CBORError) -> CBORValue {
        guard depth <= maxDepth else { throw .tooDeep }
        let initial = try reader.byte()
        let majorType = initial >> 5
        let argument = try readArgument(&reader, info: initial & 0x1f, initial: initial)

        // A count or length can never exceed the bytes left: each item takes at least one byte.
        func boundedCount() throws(CBORError) -> Int {
            guard argument <= UInt64(reader.remaining) else { throw .lengthOutOfRange }
            return Int(argument)
        }

        switch majorType {
        case 0: return .unsigned(argument)
        case 1: return .negative(argument)
        case 2: return .bytes(Array(try reader.take(try boundedCount())))
        case 3:
            guard let text = String(validating: try reader.take(try boundedCount()), as: UTF8.self) else { throw .invalidUTF8 }
            return .text(text)
        case 4:
            let count = try boundedCount()
            guard count <= maxCount else { throw .lengthOutOfRange }
            var elements: [CBORValue] = []
            elements.reserveCapacity(count)
            for _ in 0..<count { elements.append(try readItem(&reader, depth: depth + 1)) }
            return .array(elements)
        case 5:
            let count = try boundedCount()
            guard count <= maxCount else { throw .lengthOutOfRange }
            var entries: [CBORMapEntry] = []
            entries.reserveCapacity(count)
            for _ in 0..<count {
                let key = try readItem(&reader, depth: depth + 1)
                guard !entries.contains(where: { $0.key == key }) else { throw .duplicateKey }
                entries.append(CBORMapEntry(key: key, value: try readItem(&reader, depth: depth + 1)))
            }
            return .map(entries)
        default:
            throw .unsupported(initial)
        }
    }
}
