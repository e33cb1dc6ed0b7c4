import Foundation
import Hummingbird

extension Request {
    /// The credential of the request's `Authorization: Bearer …` header (scheme matched without
    /// regard to case, surrounding spaces trimmed); nil when there is none.
    public var bearerCredential: String? {
        guard let header = headers[.authorization] else { return nil }
        let scheme = "bearer ".utf8
        guard header.utf8.count > scheme.count,
            zip(header.utf8, scheme).allSatisfy({ sent, expected in sent == expected || (expected >= 0x61 && sent == expected - 0x20) })
        else { return nil }
        let credential = header.utf8.dropFirst(scheme.count)
        let trimmed = String(Substring(credential)).trimmingCharacters(in: .whitespaces)
        return trimmed.isEmpty ? nil : trimmed
    }
}
