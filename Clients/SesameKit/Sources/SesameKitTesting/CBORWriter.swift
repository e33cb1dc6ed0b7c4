/// Writes the little CBOR an App Attest object is made of (canonical, definite lengths); tests that
/// craft attestation objects by hand use it too.
public enum CBORWriter {
    /// A CBOR data item.
    public indirect enum Value: Sendable {
        case unsigned(UInt64)
        /// -1 - n.
        case negative(UInt64)
        case bytes([UInt8])
        case text(String)
        case array([Value])
        case map([(Value, Value)])
    }

    /// The encoding of `value`.
    public static func encode(_ value: Value) -> [UInt8] {
        var output: [UInt8] = []
        append(value, to: &output)
        return output
    }

    private static func head(_ majorType: UInt8, _ argument: UInt64, to output: inout [UInt8]) {
        let type = majorType << 5
        switch argument {
        case 0..<24: output.append(type | UInt8(argument))
        case 24..<0x100: output += [type | 24, UInt8(argument)]
        case 0x100..<0x10000: output += [type | 25, UInt8(argument >> 8), UInt8(argument & 0xff)]
        case 0x10000..<0x1_0000_0000: output += [type | 26] + (0..<4).reversed().map { UInt8(argument >> ($0 * 8) & 0xff) }
        default: output += [type | 27] + (0..<8).reversed().map { UInt8(argument >> ($0 * 8) & 0xff) }
        }
    }

    private static func append(_ value: Value, to output: inout [UInt8]) {
        switch value {
        case .unsigned(let number): head(0, number, to: &output)
        case .negative(let number): head(1, number, to: &output)
        case .bytes(let bytes):
            head(2, UInt64(bytes.count), to: &output)
            output += bytes
        case .text(let text):
            head(3, UInt64(text.utf8.count), to: &output)
            output += Array(text.utf8)
        case .array(let elements):
            head(4, UInt64(elements.count), to: &output)
            for element in elements { append(element, to: &output) }
        case .map(let entries):
            head(5, UInt64(entries.count), to: &output)
            for (key, value) in entries {
                append(key, to: &output)
                append(value, to: &output)
            }
        }
    }
}
