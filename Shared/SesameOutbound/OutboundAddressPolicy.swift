import Foundation
import SesameConfiguration

/// Which addresses an outbound call to a URL a user configured may reach: none inside the
/// deployment (loopback, private, link-local and cloud metadata, unique-local, CGNAT, multicast,
/// reserved), unless the operator opened that host and port for the call's purpose and app
/// (`SESAME_OUTBOUND_ALLOWED_HOSTS`, `OutboundAllowance`: an internal identity provider's JWKS, an
/// internal model server one app relays to). Pure: the client applies it to the addresses it is
/// about to connect to, at each call; admin applies it when a URL is set.
public struct OutboundAddressPolicy: Sendable {
    /// The internal hosts opened, each for its purposes, port and apps.
    public let allowances: [OutboundAllowance]
    /// Whether plain `http` is accepted for those hosts (development only); never for others.
    public let allowsPlainHTTPToAllowedHosts: Bool

    public init(allowances: [OutboundAllowance] = [], allowsPlainHTTPToAllowedHosts: Bool = false) {
        self.allowances = allowances
        self.allowsPlainHTTPToAllowedHosts = allowsPlainHTTPToAllowedHosts
    }

    /// Addresses no outbound call reaches unless its host is allowed. IPv4-mapped IPv6 addresses
    /// are judged as the IPv4 address they carry (`IPAddressRange` reads them so).
    static let internalRanges: [IPAddressRange] = [
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
        "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4",
        "240.0.0.0/4",
        // IPv4-compatible (deprecated), IPv4-translated (RFC 2765, ::ffff:0:a.b.c.d), 6to4 and Teredo
        // addresses carry an IPv4 address a relay may reach.
        "::/96", "::ffff:0:0:0/96", "2002::/16", "2001::/32",
        "::/128", "::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001:db8::/32", "fc00::/7", "fe80::/10", "fec0::/10",
        "ff00::/8",
    ].map { IPAddressRange($0)! }

    /// Whether `address` (text form) lies inside the deployment's reach; unparseable counts as inside.
    public static func isInternal(_ address: String) -> Bool {
        guard IPAddressRange(address) != nil else { return true }
        return internalRanges.contains { $0.contains(address) }
    }

    /// Whether `text` is an IP address (rather than a name to resolve).
    public static func isAddress(_ text: String) -> Bool {
        IPAddressRange(text) != nil && !text.contains("/")
    }

    /// Whether the operator opened `host:port` to calls for `use`.
    public func opens(host: String, port: Int, for use: OutboundUse) -> Bool {
        allowances.contains { $0.permits(host: host, port: port, for: use) }
    }

    /// Whether `host:port` may be reached at `address` by a call for `use`.
    public func permits(host: String, port: Int, address: String, for use: OutboundUse) -> Bool {
        !Self.isInternal(address) || opens(host: host, port: port, for: use)
    }

    /// Whether `scheme` may be used for `host:port` by a call for `use`.
    public func permits(scheme: String, host: String, port: Int, for use: OutboundUse) -> Bool {
        scheme == "https" || (scheme == "http" && allowsPlainHTTPToAllowedHosts && opens(host: host, port: port, for: use))
    }

    /// The port a URL of `scheme` reaches when it names none.
    public static func defaultPort(scheme: String) -> Int { scheme == "http" ? 80 : 443 }
}

extension OutboundAddressPolicy {
    /// The deployment's policy: the operator's allowances; plain http to them in development only.
    public init(configuration: ServiceConfiguration) {
        self.init(allowances: configuration.outboundAllowances, allowsPlainHTTPToAllowedHosts: configuration.environment == .development)
    }

    /// The policy for calls to URLs the operator set (Apple's services): their hosts and ports are
    /// opened to `.apple` calls, whatever they resolve to; nothing else is, and no app's allowance
    /// applies.
    public static func operatorURLs(_ urls: [String], configuration: ServiceConfiguration) -> OutboundAddressPolicy {
        let allowances = urls.compactMap { url -> OutboundAllowance? in
            guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(), let host = components.host else {
                return nil
            }
            return OutboundAllowance(purposes: [.apple], host: host, port: components.port ?? defaultPort(scheme: scheme), appIDs: nil)
        }
        return OutboundAddressPolicy(allowances: allowances, allowsPlainHTTPToAllowedHosts: configuration.environment == .development)
    }

    /// Why `url` cannot be configured as an outbound address for `use`, or nil when it may be: what
    /// can be told before any call (scheme, a host that is itself an internal address the operator
    /// did not open for this purpose, port and app). Names are checked at each call, against what
    /// they resolve to then.
    public func refusal(of url: String, for use: OutboundUse) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(), let written = components.host,
            !written.isEmpty
        else { return "must be an absolute https URL" }
        let host = OutboundAllowance.bare(written)
        let port = components.port ?? Self.defaultPort(scheme: scheme)
        guard permits(scheme: scheme, host: host, port: port, for: use) else { return "must be an https URL" }
        if Self.isAddress(host), !permits(host: host, port: port, address: host, for: use) {
            return "names an internal address (\(host)) that this deployment does not open to \(use.purpose.rawValue) calls of this app on port \(port)"
        }
        if !Self.isAddress(host), Self.isNumericHost(host) { return "names an address in a form other than dotted decimal (\(host)): write the address as a.b.c.d, or use a name" }
        return nil
    }

    /// Whether `host` is an IPv4 address in one of the forms `inet_aton` also reads (`2130706433`,
    /// `0x7f.1`, `127.1`, octal parts): a name's last label is never all digits, so such a host
    /// is an address some resolvers would reach, and it is refused rather than judged.
    static func isNumericHost(_ host: String) -> Bool {
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        guard let last = labels.last, !last.isEmpty else { return false }
        let lower = last.lowercased()
        if lower.hasPrefix("0x") { return lower.dropFirst(2).allSatisfy(\.isHexDigit) }
        return lower.allSatisfy(\.isNumber)
    }
}
