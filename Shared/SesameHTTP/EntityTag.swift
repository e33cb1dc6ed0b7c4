import Foundation

/// Conditional requests on entity tags.
public enum EntityTag {
    /// Whether an `If-None-Match` value names `etag` (or is `*`); weak comparison, as RFC 9110 asks.
    public static func matches(ifNoneMatch: String, _ etag: String) -> Bool {
        ifNoneMatch.split(separator: ",").contains { candidate in
            let trimmed = candidate.trimmingCharacters(in: .whitespaces)
            return trimmed == "*" || trimmed == etag || trimmed == "W/" + etag
        }
    }
}
