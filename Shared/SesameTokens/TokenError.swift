/// Why a token was not accepted. Callers map it to `invalid_token`; the reason is for logs only.
public struct TokenError: Error, Sendable, CustomStringConvertible {
    public let reason: String

    public init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}
