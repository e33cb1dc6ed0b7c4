import Foundation

/// Base64 as Sesame's clients send it: standard or URL-safe alphabet, padded or not.
public enum Base64 {
    /// The bytes of `text`, or nil when it is not base64 in either alphabet.
    public static func decode(_ text: String) -> [UInt8]? {
        var normalized = text.filter { !$0.isWhitespace }.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        normalized += String(repeating: "=", count: (4 - normalized.count % 4) % 4)
        return Data(base64Encoded: normalized).map(Array.init)
    }

    /// URL-safe base64 without padding (RFC 4648 §5), as JWTs use it.
    public static func urlEncode(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
