#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IP network in CIDR notation (`10.0.0.0/8`, `fd00::/8`) or a single address (`127.0.0.1`).
///
/// IPv4-mapped IPv6 addresses (`::ffff:10.0.0.1`, as a dual-stack socket reports IPv4 peers) are
/// treated as the IPv4 address they carry.
public struct IPAddressRange: Sendable, Equatable, CustomStringConvertible {
    /// The network's address bytes (4 or 16), with the host bits cleared.
    private let network: [UInt8]
    private let prefixLength: Int
    public let description: String

    /// Parses `text`, or returns nil when it is not an address or CIDR range.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = Self.bytes(of: String(parts[0])) else { return nil }
        let bits = address.count * 8
        var prefix = bits
        if parts.count == 2 {
            guard let parsed = Int(parts[1]), (0...bits).contains(parsed) else { return nil }
            prefix = parsed
        }
        self.network = Self.masked(address, prefixLength: prefix)
        self.prefixLength = prefix
        self.description = text
    }

    /// Whether `address` lies in this range (false when it is not an IP address).
    public func contains(_ address: String) -> Bool {
        guard let bytes = Self.bytes(of: address), bytes.count == network.count else { return false }
        return Self.masked(bytes, prefixLength: prefixLength) == network
    }

    /// The key a per-client limit counts `address` under: an IPv4 address itself, an IPv6 address's
    /// /64 (one subscriber gets a whole /64, so counting single addresses would let it rotate
    /// through 2^64 of them), anything else as it is.
    public static func limitKey(of address: String) -> String {
        guard let bytes = bytes(of: address) else { return address }
        guard bytes.count == 16 else { return bytes.map(String.init).joined(separator: ".") }
        let prefix = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return prefix.joined(separator: ":") + "::/64"
    }

    /// The bytes of an IPv4 or IPv6 address in text form (IPv4-mapped IPv6 as IPv4).
    static func bytes(of address: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, address, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        let mappedPrefix: [UInt8] = Array(repeating: 0, count: 10) + [0xFF, 0xFF]
        return Array(bytes.prefix(12)) == mappedPrefix ? Array(bytes.suffix(4)) : bytes
    }

    private static func masked(_ bytes: [UInt8], prefixLength: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let keep = min(max(prefixLength - index * 8, 0), 8)
            return keep == 8 ? byte : byte & ~(UInt8(0xFF) >> keep)
        }
    }
}
