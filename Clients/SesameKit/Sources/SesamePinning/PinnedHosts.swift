import Crypto
import Foundation

/// Which SPKI hashes a host may present, from a verified registry: the check a pinned TLS session
/// makes on the server's leaf certificate. Kept free of Security.framework so it runs everywhere.
public struct PinnedHosts: Sendable, Equatable {
    public let pins: [PinRegistry.Pin]
    /// The registry's sequence, when it carried Sesame's freshness.
    public let sequence: Int64?

    public init(pins: [PinRegistry.Pin], sequence: Int64? = nil) {
        self.pins = pins
        self.sequence = sequence
    }

    /// Whether `pattern` covers `host`: exactly, or `*.example.com` for one more label (never
    /// `example.com` itself, never two labels). Case-insensitive, a trailing dot ignored.
    public static func pattern(_ pattern: String, covers host: String) -> Bool {
        let host = host.lowercased().trimmingSuffix(".")
        let pattern = pattern.lowercased().trimmingSuffix(".")
        guard pattern.hasPrefix("*.") else { return pattern == host }
        let parent = pattern.dropFirst(2)
        guard host.hasSuffix("." + parent) else { return false }
        let label = host.dropLast(parent.count + 1)
        return !label.isEmpty && !label.contains(".")
    }

    /// Whether `host` is pinned at all (then only its pinned keys are accepted).
    public func isPinned(_ host: String) -> Bool { pins.contains { Self.pattern($0.domainName, covers: host) } }

    /// Whether a leaf certificate with SubjectPublicKeyInfo `spki` (DER) may serve `host`: true for a
    /// host nobody pinned, else only when SHA-256 of its SPKI is one of the host's pins.
    public func accepts(spki: Data, for host: String) -> Bool {
        let matching = pins.filter { Self.pattern($0.domainName, covers: host) }
        guard !matching.isEmpty else { return true }
        let hash = Data(SHA256.hash(data: spki)).base64EncodedString()
        return matching.contains { $0.key == hash }
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}
