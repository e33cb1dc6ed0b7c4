import Foundation

/// What an outbound call to an address a user configured is for. Each has its own allow-list
/// entries: a host opened to identity providers' JWKS is not thereby a relay upstream (a relay is a
/// full proxy whose answer an app reads).
public enum OutboundPurpose: String, Sendable, CaseIterable, Hashable {
    /// An identity issuer's JWKS, fetched by delivery.
    case jwks
    /// An app's webhooks, posted by admin.
    case webhook
    /// An app's relay upstreams, called by delivery for attested installs.
    case relay
    /// Apple's DeviceCheck and App Attest data services at the URLs the operator set
    /// (`SESAME_APPLE_*_URL`); never named in `SESAME_OUTBOUND_ALLOWED_HOSTS`.
    case apple
}

/// Who an outbound call is made for: its purpose and the app whose setting named the address
/// (nil for the operator's own, Apple's).
public struct OutboundUse: Sendable, Hashable, CustomStringConvertible {
    public let purpose: OutboundPurpose
    public let appID: String?

    public init(_ purpose: OutboundPurpose, appID: String?) {
        self.purpose = purpose
        self.appID = appID
    }

    public var description: String { appID.map { "\(purpose.rawValue) of \($0)" } ?? purpose.rawValue }
}

/// One entry of `SESAME_OUTBOUND_ALLOWED_HOSTS`: an internal host and port that calls for one
/// purpose, made for the apps named, may reach. Written `purpose=host:port@apps`:
///
/// - `purpose` is `jwks`, `webhook` or `relay` (or `*` for the three);
/// - `host` a name or an address (IPv6 in brackets), `port` a number (or `*`: every port);
/// - `apps` app ids joined by `+` (or `*`: every app on the deployment).
///
/// `jwks=idp.corp.internal:443@*` lets every app's identity issuer live on the internal IdP;
/// `relay=llm.corp.internal:8443@ABCDE12345.com.example.app` opens one internal model server to one
/// app's relays and to nothing else.
public struct OutboundAllowance: Sendable, Hashable, CustomStringConvertible {
    /// The purposes it opens (never `.apple`: the operator's Apple URLs are allowed by being set).
    public let purposes: Set<OutboundPurpose>
    /// The host, lowercased, without an IPv6 literal's brackets.
    public let host: String
    /// The port, or nil for every port.
    public let port: Int?
    /// The apps it serves, or nil for every app.
    public let appIDs: Set<String>?

    public init(purposes: Set<OutboundPurpose>, host: String, port: Int?, appIDs: Set<String>?) {
        self.purposes = purposes
        self.host = Self.bare(host.lowercased())
        self.port = port
        self.appIDs = appIDs
    }

    /// Whether a call for `use` to `host:port` is what this entry opens.
    public func permits(host: String, port: Int, for use: OutboundUse) -> Bool {
        guard purposes.contains(use.purpose), Self.bare(host.lowercased()) == self.host, self.port == nil || self.port == port else {
            return false
        }
        guard let appIDs else { return true }
        return use.appID.map(appIDs.contains) ?? false
    }

    public var description: String {
        let purpose = purposes == Self.userPurposes ? "*" : purposes.map(\.rawValue).sorted().joined(separator: "+")
        let host = host.contains(":") ? "[\(host)]" : host
        let apps = appIDs.map { $0.sorted().joined(separator: "+") } ?? "*"
        return "\(purpose)=\(host):\(port.map(String.init) ?? "*")@\(apps)"
    }

    /// The purposes an operator's entry may name.
    public static let userPurposes: Set<OutboundPurpose> = [.jwks, .webhook, .relay]

    /// The entries of the setting's value (comma-separated), or why one cannot be read.
    public static func parseList(_ text: String) throws(ConfigurationError) -> [OutboundAllowance] {
        try text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.map {
            (entry) throws(ConfigurationError) in
            guard let allowance = OutboundAllowance(parsing: entry) else {
                throw ConfigurationError(
                    variable: "SESAME_OUTBOUND_ALLOWED_HOSTS",
                    expectation: "entries written purpose=host:port@apps (jwks=idp.corp.internal:443@*, "
                        + "relay=llm.internal:8443@TEAMID.com.example.app; purpose jwks, webhook, relay or *; port or *; apps joined by + or *), got \"\(entry)\"")
            }
            return allowance
        }
    }

    /// The entry `text` describes, or nil when it is not of the form `purpose=host:port@apps`.
    public init?(parsing text: String) {
        guard let equals = text.firstIndex(of: "="), let at = text.lastIndex(of: "@"), equals < at else { return nil }
        let purposeText = text[..<equals]
        let purposes: Set<OutboundPurpose>
        if purposeText == "*" {
            purposes = Self.userPurposes
        } else {
            let named = purposeText.split(separator: "+", omittingEmptySubsequences: false).map { OutboundPurpose(rawValue: String($0)) }
            guard !named.isEmpty, named.allSatisfy({ $0 != nil && $0 != .apple }) else { return nil }
            purposes = Set(named.compactMap { $0 })
        }
        let address = text[text.index(after: equals)..<at]
        guard let colon = address.lastIndex(of: ":") else { return nil }
        let host = String(address[..<colon])
        let portText = address[address.index(after: colon)...]
        let port: Int?
        if portText == "*" {
            port = nil
        } else {
            guard let number = Int(portText), (1...65_535).contains(number) else { return nil }
            port = number
        }
        let bareHost = Self.bare(host)
        // An IPv6 literal must be bracketed (its colons would be read as a port), a name must not be.
        guard !bareHost.isEmpty, !bareHost.contains("/"), bareHost.contains(":") == (host != bareHost) else { return nil }
        let appsText = text[text.index(after: at)...]
        let appIDs: Set<String>?
        if appsText == "*" {
            appIDs = nil
        } else {
            let named = appsText.split(separator: "+", omittingEmptySubsequences: false).map(String.init)
            guard !named.isEmpty, named.allSatisfy({ !$0.isEmpty && !$0.contains("*") }) else { return nil }
            appIDs = Set(named)
        }
        self.init(purposes: purposes, host: bareHost, port: port, appIDs: appIDs)
    }

    /// `host` without an IPv6 literal's brackets (`[::1]` is `::1`), as URLs write it and the
    /// allow-list, the policy and the resolver compare it.
    public static func bare(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }
}
