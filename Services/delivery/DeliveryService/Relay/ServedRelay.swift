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

    init(name: String, rules: RelayRules, headers: [String: String]) throws {
        guard let components = URLComponents(string: rules.upstream), let scheme = components.scheme?.lowercased(), let host = components.host,
            !host.isEmpty
        else { throw Unusable(description: "relay \(name): its upstream is not a URL") }
        self.name = name
        self.rules = rules
        self.patterns = try rules.paths.map { try RelayPathPattern($0) }
        self.injected = headers.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
        self.scheme = scheme
        self.host = host
        self.port = components.port ?? (scheme == "https" ? 443 : 80)
        var basePath = components.percentEncodedPath
        while basePath.hasSuffix("/") { basePath.removeLast() }
        self.basePath = basePath
    }

    /// Whether the relay's rules let `method` call `path` (as received, not decoded).
    func allows(path: String) -> Bool {
        patterns.contains { $0.matches(path) }
    }

    /// The upstream URL for `path` and the caller's `query` (passed on as sent).
    func upstreamURL(path: String, query: String?) -> String {
        let authority = host.contains(":") ? "[\(host)]" : host
        var url = "\(scheme)://\(authority):\(port)\(basePath)\(path)"
        if let query, !query.isEmpty { url += "?" + query }
        return url
    }

    var description: String { "relay \(name) to \(rules.upstream) (injects \(injected.map(\.name).joined(separator: ", ")))" }
}
