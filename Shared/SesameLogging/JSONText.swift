import Logging

/// Minimal JSON text writing for log lines: escaped strings and metadata values.
enum JSONText {
    /// Appends `value` as a JSON string literal, escaping quotes, backslashes and control characters.
    static func appendString(_ value: String, to output: inout String) {
        output.append("\"")
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": output.append("\\\"")
            case "\\": output.append("\\\\")
            case "\n": output.append("\\n")
            case "\r": output.append("\\r")
            case "\t": output.append("\\t")
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                output.append("\\u" + String(repeating: "0", count: 4 - hex.count) + hex)
            default: output.unicodeScalars.append(scalar)
            }
        }
        output.append("\"")
    }

    /// Appends a metadata value: strings as strings, dictionaries as objects, arrays as arrays.
    static func appendValue(_ value: Logger.Metadata.Value, to output: inout String) {
        switch value {
        case .string(let string): appendString(string, to: &output)
        case .stringConvertible(let convertible): appendString(convertible.description, to: &output)
        case .array(let items):
            output.append("[")
            for (index, item) in items.enumerated() {
                if index > 0 { output.append(",") }
                appendValue(item, to: &output)
            }
            output.append("]")
        case .dictionary(let dictionary):
            output.append("{")
            for (index, key) in dictionary.keys.sorted().enumerated() {
                if index > 0 { output.append(",") }
                appendString(key, to: &output)
                output.append(":")
                appendValue(dictionary[key]!, to: &output)
            }
            output.append("}")
        }
    }
}
