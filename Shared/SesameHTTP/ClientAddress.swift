import Foundation
import HTTPTypes
import Hummingbird

/// The address of the client a request came from, for per-client limits.
public enum ClientAddress {
    /// Behind Sesame's gateway the last `X-Forwarded-For` entry is the address nginx saw (entries
    /// before it are the client's own claims and are ignored); without one, the peer address.
    public static func of(_ request: Request, context: SesameRequestContext) -> String {
        if let forwarded = request.headers[values: .xForwardedFor].last?.split(separator: ",").last {
            let address = forwarded.trimmingCharacters(in: .whitespaces)
            if !address.isEmpty { return address }
        }
        return context.remoteAddress ?? "unknown"
    }
}

extension HTTPField.Name {
    /// `X-Forwarded-For`.
    public static let xForwardedFor = Self("X-Forwarded-For")!
}
