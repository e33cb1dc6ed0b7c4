/// Any JSON value, decoded faithfully: a whole number that fits in 64 bits stays an integer, so an
/// id or an amount in cents past 2^53 reads back as written. The one JSON value type of Sesame:
/// configs as an app reads them (`SesameConfig.Value`), as Sesame's services store and serve
/// them, audit details, and RFC 8785 canonical JSON (`canonicalBytes()`).
public enum JSONValue: Codable, Sendable, Hashable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        // Containers are tried first: a failed try builds an error carrying the coding path, so
        // trying the five scalar types before each level of a 500-deep config cost seconds (each
        // level's failures grow with its depth). A scalar costs one or two failed tries instead.
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode([String: JSONValue].self) {
            self = .object(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The members, when this is an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The number, when this is one: an integer as a `Double` (rounded past 2^53).
    public var doubleValue: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .number(let value): value
        default: nil
        }
    }

    /// The whole number, when this is one that fits in an `Int`: an integer, or a number with no
    /// fraction (`3.0`) below 2^53, where a double is still exact.
    public var intValue: Int? {
        switch self {
        case .integer(let value): Int(exactly: value)
        case .number(let value) where value.rounded() == value && abs(value) < 9.0e15: Int(value)
        default: nil
        }
    }
}
