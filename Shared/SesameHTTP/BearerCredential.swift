import Hummingbird

extension Request {
    /// The credential of the request's `Authorization: Bearer …` header (scheme matched without
    /// regard to case, surrounding spaces trimmed); nil when there is none.
    public var bearerCredential: String? { headers.bearerCredential }
}

extension HTTPFields {
    /// The credential of an `Authorization: Bearer …` header (scheme matched without regard to
    /// case, surrounding spaces and tabs trimmed); nil when there is none.
    ///
    /// Read as UTF-8 bytes: every request to delivery comes through here, and Foundation's
    /// trimming walks a 300-byte token as UTF-16 (it was a tenth of the hot path's time).
    public var bearerCredential: String? {
        guard let header = value(of: .authorization) else { return nil }
        let scheme = "bearer ".utf8
        guard header.utf8.count > scheme.count,
            zip(header.utf8, scheme).allSatisfy({ sent, expected in sent == expected || (expected >= 0x61 && sent == expected - 0x20) })
        else { return nil }
        let isBlank = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        var credential = header.utf8.dropFirst(scheme.count)
        while let first = credential.first, isBlank(first) { credential = credential.dropFirst() }
        while let last = credential.last, isBlank(last) { credential = credential.dropLast() }
        return credential.isEmpty ? nil : String(Substring(credential))
    }
}
