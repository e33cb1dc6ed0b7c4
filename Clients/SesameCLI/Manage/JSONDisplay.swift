import Foundation
import SesameJSON

/// JSON values as the command line writes and shows them (policy fields, config bodies, diffs).
enum JSONDisplay {
    /// JSON when it parses as JSON, else the text itself.
    static func parse(_ text: String) -> JSONValue {
        (try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))) ?? .string(text)
    }

    /// A value of the generated client's (a free-form container, a schema type) as a `JSONValue`.
    static func value(_ encodable: some Encodable) -> JSONValue {
        (try? JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(encodable))) ?? .null
    }

    /// `value` as one line of JSON (a string as itself), or indented JSON with `pretty`.
    static func describe(_ value: JSONValue?, pretty: Bool = false) -> String {
        guard let value, value != .null else { return pretty ? "null" : "-" }
        if case .string(let string) = value, !pretty { return string }
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted] : [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "\(value)" }
        return String(decoding: data, as: UTF8.self)
    }

    /// A generated value (free-form JSON) described as `describe` does.
    static func describe(_ encodable: (some Encodable)?, pretty: Bool = false) -> String {
        describe(encodable.map { value($0) }, pretty: pretty)
    }
}
