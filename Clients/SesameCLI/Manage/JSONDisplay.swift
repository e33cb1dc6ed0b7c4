import Foundation

/// JSON values as the command line writes and shows them (policy fields, config bodies, diffs).
enum JSONDisplay {
    /// JSON when it parses as JSON, else the text itself.
    static func parse(_ text: String) -> Any {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)) ?? text
    }

    /// `value` as one line of JSON (a string as itself), or indented JSON with `pretty`.
    static func describe(_ value: Any?, pretty: Bool = false) -> String {
        guard let value, !(value is NSNull) else { return pretty ? "null" : "-" }
        if let string = value as? String, !pretty { return string }
        var options: JSONSerialization.WritingOptions = [.fragmentsAllowed, .sortedKeys, .withoutEscapingSlashes]
        if pretty { options.insert(.prettyPrinted) }
        guard let data = try? JSONSerialization.data(withJSONObject: value, options: options) else { return "\(value)" }
        return String(decoding: data, as: UTF8.self)
    }
}
