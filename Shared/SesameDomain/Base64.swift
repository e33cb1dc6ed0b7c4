import ExtrasBase64
import Foundation

/// Base64 as Sesame's clients send it: standard or URL-safe alphabet, padded or not.
///
/// All work on the UTF-8 bytes: an attestation object is 4 to 6 KB of base64 on every attest,
/// and going through `Character`s and `NSString` replacements cost more than the rest of reading it.
/// Base64url is swift-extras-base64's; inlinable, so callers get them specialized for their bytes.
public enum Base64 {
    /// The bytes of `text`, or nil when it is not base64 in either alphabet. ASCII whitespace
    /// (line breaks of a wrapped encoding) is skipped.
    @inlinable
    public static func decode(_ text: String) -> [UInt8]? {
        var normalized = [UInt8]()
        normalized.reserveCapacity(text.utf8.count + 3)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "-"): normalized.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): normalized.append(UInt8(ascii: "/"))
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"), 0x0B, 0x0C: continue
            // Anything else outside the alphabet is the decoder's to refuse.
            default: normalized.append(byte)
            }
        }
        normalized.append(contentsOf: repeatElement(UInt8(ascii: "="), count: (4 - normalized.count % 4) % 4))
        return Data(base64Encoded: Data(normalized)).map(Array.init)
    }

    /// URL-safe base64 without padding (RFC 4648 §5), as JWTs use it.
    @inlinable
    public static func urlEncode(_ bytes: some Sequence<UInt8>) -> String {
        ExtrasBase64.Base64.encodeToString(bytes: Array(bytes), options: [.base64UrlAlphabet, .omitPaddingCharacter])
    }

    /// The bytes of `text` when it is URL-safe base64 without padding and nothing else (a JWS
    /// segment, RFC 7515 §2): no `=`, no whitespace, no character of the standard alphabet.
    @inlinable
    public static func urlDecode(_ text: some Collection<UInt8>) -> [UInt8]? {
        // Checked here: the decoder would let a `=` through at the end.
        guard text.allSatisfy(isURLAlphabet) else { return nil }
        return try? ExtrasBase64.Base64.decode(bytes: text, options: [.base64UrlAlphabet, .omitPaddingCharacter])
    }

    @inlinable
    static func isURLAlphabet(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
    }
}
