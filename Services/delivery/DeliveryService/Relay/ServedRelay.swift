import Foundation
import SesameDomain

/// A relay as delivery enforces it: its rules, its path patterns parsed once, where its upstream
/// is, and the headers it injects. The header values are the secrets: never printed.
struct ServedRelay: Sendable, CustomStringConvertible {
    let name: String
    let rules: RelayRules
    let patterns: [RelayPathPattern]
    /// Written into every upstream call, after the caller's headers are filtered.
    let injected: [(name: String, value: String)]
    let scheme: String
    let host: String
    let port: Int
    /// The upstream's base path, without a final `/` (empty for an origin).
    let basePath: String

    struct Unusable: Error, CustomStringConvertible {
        let description: String
    }

    /// A relay to `upstream`, as `rules.upstream` parsed.
    init(name: String, rules: RelayRules, upstream: RelayUpstream, headers: [String: String]) throws {
        self.name = name
        self.rules = rules
        self.patterns = try rules.paths.map { try RelayPathPattern($0) }
        self.injected = headers.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
        self.scheme = upstream.scheme
        self.host = upstream.host
        self.port = upstream.port
        self.basePath = upstream.basePath
    }

    /// Whether the relay's rules let `method` call `path` (as received, not decoded).
    func allows(path: String) -> Bool {
        patterns.contains { $0.matches(path) }
    }

    /// The upstream URL for `path` and the caller's `query` (passed on as sent).
    func upstreamURL(path: String, query: String?) -> String {
        var url = "\(scheme)://\(RelayUpstream.bracketed(host)):\(port)\(basePath)\(path)"
        if let query, !query.isEmpty { url += "?" + query }
        return url
    }

    var description: String { "relay \(name) to \(rules.upstream) (injects \(injected.map(\.name).joined(separator: ", ")))" }
}
