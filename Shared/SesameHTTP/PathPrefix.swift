/// A path and everything below it, matched on whole segments: `/v1/admin` covers `/v1/admin` and
/// `/v1/admin/audit`, not `/v1/administrator`.
public struct PathPrefix: Sendable, Hashable, CustomStringConvertible {
    /// The path, with a leading `/` and no trailing one (`/` alone for the root).
    public let path: String

    /// `path` with or without its slashes: `v1/admin`, `/v1/admin/`.
    public init(_ path: String) {
        let trimmed = path.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
        self.path = "/" + trimmed
    }

    /// Whether `requestPath` is this path or below it.
    public func covers(_ requestPath: String) -> Bool {
        guard requestPath.hasPrefix(path) else { return false }
        if path == "/" || requestPath.utf8.count == path.utf8.count { return true }
        return requestPath.utf8[requestPath.utf8.index(requestPath.utf8.startIndex, offsetBy: path.utf8.count)] == UInt8(ascii: "/")
    }

    /// How many segments deep the prefix is: the deeper of two covering prefixes is the more specific.
    public var depth: Int { path.split(separator: "/").count }

    public var description: String { path }
}
