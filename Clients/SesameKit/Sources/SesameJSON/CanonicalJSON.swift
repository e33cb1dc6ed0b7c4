import Foundation

/// JSON written by the JSON Canonicalization Scheme (RFC 8785): the one byte sequence a signer and
/// a verifier agree on. Numbers are IEEE 754 doubles, as in I-JSON: an integer is written as the
/// double it equals, and one past 2^53, which no double carries exactly, is refused.
extension JSONValue {
    /// A number JCS cannot write exactly: NaN, an infinity, or an integer past 2^53.
    public struct InvalidNumber: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// The largest magnitude of an integer a JSON number (an IEEE 754 double) carries exactly.
    public static let largestExactInteger: Int64 = 1 << 53

    /// The canonical UTF-8 bytes: no whitespace, object members sorted by their names' UTF-16 code
    /// units, strings escaped as ECMAScript's JSON.stringify does, numbers as ECMAScript writes them.
    public func canonicalBytes() throws(InvalidNumber) -> [UInt8] {
        var output = ""
        try writeCanonical(to: &output)
        return Array(output.utf8)
    }

    private func writeCanonical(to output: inout String) throws(InvalidNumber) {
        switch self {
        case .null: output += "null"
        case .bool(let value): output += value ? "true" : "false"
        case .integer(let value):
            guard value.magnitude <= UInt64(Self.largestExactInteger) else {
                throw InvalidNumber(description: "the integer \(value) is past 2^53, which a JSON number cannot carry exactly")
            }
            output += try Self.ecmaScriptString(Double(value))
        case .number(let value): output += try Self.ecmaScriptString(value)
        case .string(let value): Self.writeString(value, to: &output)
        case .array(let elements):
            output += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { output += "," }
                try element.writeCanonical(to: &output)
            }
            output += "]"
        case .object(let members):
            output += "{"
            let sorted = members.sorted { Array($0.key.utf16).lexicographicallyPrecedes(Array($1.key.utf16)) }
            for (index, (name, value)) in sorted.enumerated() {
                if index > 0 { output += "," }
                Self.writeString(name, to: &output)
                output += ":"
                try value.writeCanonical(to: &output)
            }
            output += "}"
        }
    }

    /// RFC 8785 §3.2.2.2: `"` and `\` escaped, control characters as \b \t \n \f \r or \u00xx,
    /// everything else as itself.
    static func writeString(_ string: String, to output: inout String) {
        output += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\u{08}": output += "\\b"
            case "\t": output += "\\t"
            case "\n": output += "\\n"
            case "\u{0C}": output += "\\f"
            case "\r": output += "\\r"
            case let control where control.value < 0x20:
                let hex = String(control.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }

    /// ECMAScript's Number::toString (RFC 8785 §3.2.2.3): the shortest digits that round-trip,
    /// placed as ECMAScript places them.
    static func ecmaScriptString(_ value: Double) throws(InvalidNumber) -> String {
        guard value.isFinite else { throw InvalidNumber(description: "\(value) is not a number JSON can write") }
        if value == 0 { return "0" }  // -0 too
        if value < 0 { return "-" + (try ecmaScriptString(-value)) }
        // Swift's description is also the shortest round-trip digits; only the layout differs.
        let (digits, exponent) = shortestDigits(value)
        let k = digits.count
        let n = exponent  // value = 0.d1…dk × 10^n
        if k <= n && n <= 21 { return digits + String(repeating: "0", count: n - k) }
        if 0 < n && n <= 21 { return String(digits.prefix(n)) + "." + String(digits.dropFirst(n)) }
        if -6 < n && n <= 0 { return "0." + String(repeating: "0", count: -n) + digits }
        let e = n - 1
        let mantissa = k == 1 ? digits : String(digits.prefix(1)) + "." + String(digits.dropFirst())
        return mantissa + "e" + (e < 0 ? "-" : "+") + String(abs(e))
    }

    /// The decimal digits (no leading or trailing zeros) and exponent n with value = 0.digits × 10^n.
    static func shortestDigits(_ value: Double) -> (String, Int) {
        let text = value.description  // "123.45", "1e-07", "1.2345e+20", "5e-324"
        let parts = text.lowercased().split(separator: "e", maxSplits: 1)
        let mantissa = String(parts[0])
        let exponent = parts.count == 2 ? Int(parts[1])! : 0
        let pieces = mantissa.split(separator: ".", omittingEmptySubsequences: false)
        let whole = String(pieces[0])
        let fraction = pieces.count == 2 ? String(pieces[1]) : ""
        var digits = whole + fraction
        var pointPosition = whole.count + exponent
        while digits.hasPrefix("0") {
            digits.removeFirst()
            pointPosition -= 1
        }
        while digits.hasSuffix("0") { digits.removeLast() }
        return (digits, pointPosition)
    }
}
