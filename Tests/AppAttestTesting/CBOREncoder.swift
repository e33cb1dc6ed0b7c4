import CBOR
import SesameKitTesting

/// Encodes `CBORValue`s (canonical, definite lengths): what a device's CBOR looks like, for tests.
/// The encoding itself is SesameKitTesting's, the one its software attester writes with.
public enum CBOREncoder {
    /// The encoding of `value`.
    public static func encode(_ value: CBORValue) -> [UInt8] {
        CBORWriter.encode(written(value))
    }

    static func written(_ value: CBORValue) -> CBORWriter.Value {
        switch value {
        case .unsigned(let number): .unsigned(number)
        case .negative(let number): .negative(number)
        case .bytes(let bytes): .bytes(bytes)
        case .text(let text): .text(text)
        case .array(let elements): .array(elements.map(written))
        case .map(let entries): .map(entries.map { (written($0.key), written($0.value)) })
        }
    }
}
