import Foundation
import SesameDomain
import Testing

/// Base64 as clients send it, both alphabets, padded or not, and what is not base64.
@Suite("Base64")
struct Base64Tests {
    @Test("every length round-trips through both alphabets, padded or not, wrapped or not")
    func roundTrips() {
        for length in 0..<70 {
            let bytes = (0..<length).map { UInt8(($0 * 37 + 251) % 256) }
            let standard = Data(bytes).base64EncodedString()
            let url = Base64.urlEncode(bytes)
            #expect(!url.contains("=") && !url.contains("+") && !url.contains("/"))
            #expect(url == standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: ""))
            #expect(Base64.decode(standard) == bytes)
            #expect(Base64.decode(url) == bytes)
            #expect(Base64.decode(Data(bytes).base64EncodedString(options: .lineLength64Characters)) == bytes)
        }
    }

    @Test("refused: characters outside both alphabets, an impossible length, padding in the middle")
    func refusals() {
        for text in ["QUJD*", "QUJD\u{00E9}", "Q", "QU=JD", "QUJD\u{0000}"] {
            #expect(Base64.decode(text) == nil, "\(text)")
        }
    }

    @Test("strict base64url: what urlEncode writes reads back; padding, the standard alphabet, whitespace and impossible lengths do not")
    func strictURL() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(($0 * 53 + 7) % 256) }
            #expect(Base64.urlDecode(Array(Base64.urlEncode(bytes).utf8)) == bytes)
        }
        for text in ["QUJD=", "QUI=", "+/+/", "QU JD", "QUJD\n", "Q", "QUJDR"] {
            #expect(Base64.urlDecode(Array(text.utf8)) == nil, "\(text)")
        }
    }
}
