import Foundation

/// An attested relay's rules as its owner sets them (issue 60): which upstream, which calls, what
/// is injected, who may call and how much. Validated here, once, for admin (which stores them) and
/// the data plane (which enforces them); every list and number has a documented bound.
public struct RelayRules: Codable, Sendable, Equatable {
    /// The upstream origin, optionally with a base path: `https://api.openai.com` or
    /// `https://maps.example.com/v2` (admin checks it against the outbound address policy too).
    public var upstream: String
    /// The methods the app may call, from `allowedMethods`.
    public var methods: [String]
    /// The paths the app may call under the upstream, as `RelayPathPattern`s.
    public var paths: [String]
    /// The least tier a caller's token must have.
    public var leastTier: TrustTier
    /// What each call must carry besides the access token.
    public var proof: RelayProof
    public var maxRequestBytes: Int
    public var maxResponseBytes: Int
    public var timeoutSeconds: Int
    /// Calls per install per minute and per day, and per app per day; nil: no quota of that kind.
    public var perInstallPerMinute: Int?
    public var perInstallPerDay: Int?
    public var perAppPerDay: Int?

    public static let allowedMethods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    public static let maxPaths = 50
    public static let requestBytesRange = 1...(10 << 20)
    public static let responseBytesRange = 1...(100 << 20)
    public static let timeoutRange = 1...300
    public static let quotaRange = 1...10_000_000

    public init(
        upstream: String, methods: [String], paths: [String], leastTier: TrustTier = .attested, proof: RelayProof = .none,
        maxRequestBytes: Int = 1 << 20, maxResponseBytes: Int = 10 << 20, timeoutSeconds: Int = 60,
        perInstallPerMinute: Int? = nil, perInstallPerDay: Int? = nil, perAppPerDay: Int? = nil
    ) {
        self.upstream = upstream
        self.methods = methods
        self.paths = paths
        self.leastTier = leastTier
        self.proof = proof
        self.maxRequestBytes = maxRequestBytes
        self.maxResponseBytes = maxResponseBytes
        self.timeoutSeconds = timeoutSeconds
        self.perInstallPerMinute = perInstallPerMinute
        self.perInstallPerDay = perInstallPerDay
        self.perAppPerDay = perAppPerDay
    }

    /// A field that is not acceptable, and why.
    public struct Invalid: Error, Equatable, Sendable {
        public let field: String
        public let reason: String
    }

    /// Refuses what the data plane could not enforce safely, naming the field.
    public func validate() throws(Invalid) {
        guard !methods.isEmpty, methods.count <= Self.allowedMethods.count, Set(methods).count == methods.count,
            methods.allSatisfy(Self.allowedMethods.contains)
        else { throw Invalid(field: "methods", reason: "must list 1 to 5 distinct methods of \(Self.allowedMethods.joined(separator: ", "))") }
        guard (1...Self.maxPaths).contains(paths.count), Set(paths).count == paths.count else {
            throw Invalid(field: "paths", reason: "must list 1 to \(Self.maxPaths) distinct path patterns")
        }
        for path in paths {
            do { _ = try RelayPathPattern(path) } catch { throw Invalid(field: "paths", reason: "\(path): \(error.reason)") }
        }
        for (field, value, range) in [
            ("maxRequestBytes", maxRequestBytes, Self.requestBytesRange), ("maxResponseBytes", maxResponseBytes, Self.responseBytesRange),
            ("timeoutSeconds", timeoutSeconds, Self.timeoutRange),
        ] where !range.contains(value) {
            throw Invalid(field: field, reason: "must be from \(range.lowerBound) to \(range.upperBound)")
        }
        for (field, value) in [("perInstallPerMinute", perInstallPerMinute), ("perInstallPerDay", perInstallPerDay), ("perAppPerDay", perAppPerDay)] {
            if let value, !Self.quotaRange.contains(value) {
                throw Invalid(field: field, reason: "must be from 1 to \(Self.quotaRange.upperBound), or null for no quota")
            }
        }
    }

    /// The upstream's origin as its injected headers are sealed to it (`RelayUpstream.origin`); nil
    /// when the upstream is not a URL with a host.
    public var origin: String? { Self.origin(of: upstream) }

    /// `upstream`'s origin (see `RelayUpstream.origin`).
    public static func origin(of upstream: String) -> String? {
        RelayUpstream(upstream)?.origin
    }

    /// Whether `name` may name a relay: 1 to 64 of a–z, 0–9 and `-`, starting with a letter or digit
    /// (it appears in `/v1/relay/{name}/…`).
    public static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...64).contains(bytes.count), bytes[0] != UInt8(ascii: "-") else { return false }
        return bytes.allSatisfy { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "-") }
    }
}

/// A relay's upstream URL taken apart, once, for where its calls go (delivery) and for the origin
/// its headers are sealed to (admin and delivery).
public struct RelayUpstream: Sendable, Equatable {
    /// Lowercased.
    public let scheme: String
    /// As written, an IPv6 address without its brackets (which Foundation's `URLComponents.host`
    /// keeps): what the outbound client resolves and checks as an address.
    public let host: String
    /// The URL's port, or the scheme's default.
    public let port: Int
    /// The base path, percent-encoded as written, without a final `/` (empty for an origin).
    public let basePath: String

    /// Nil when `upstream` is not a URL with a scheme and a host.
    public init?(_ upstream: String) {
        guard let components = URLComponents(string: upstream), let scheme = components.scheme?.lowercased(), let host = components.host,
            !host.isEmpty
        else { return nil }
        self.scheme = scheme
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        port = components.port ?? (scheme == "https" ? 443 : 80)
        var basePath = components.percentEncodedPath
        while basePath.hasSuffix("/") { basePath.removeLast() }
        self.basePath = basePath
    }

    /// The host as a URL writes it: an IPv6 address in brackets.
    public var authority: String { Self.bracketed(host) }

    /// `host` as a URL writes it: an IPv6 address in brackets.
    public static func bracketed(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }

    /// The origin the injected headers are sealed to: scheme and host lowercased, the port always
    /// written (`https://api.openai.com:443`). A relay moved to another origin cannot open the
    /// headers sealed for this one.
    public var origin: String { "\(scheme)://\(authority.lowercased()):\(port)" }
}

/// What a relayed call must carry besides the install's access token.
public enum RelayProof: String, Codable, Sendable, CaseIterable {
    /// The access token alone.
    case none
    /// A single-use API token (`SesameClient.apiToken(limitedUse:)`), spent by the call.
    case limitedUseToken
    /// A fresh App Attest assertion over the request.
    case assertion
}

/// A path the app may call under a relay's upstream: `/`-separated segments, each a literal, `*`
/// (exactly one segment) or, last only, `**` (one or more segments). Literals are unreserved
/// characters and a few sub-delimiters, never `%` (no encoded slash or dot slips through), never `.`
/// or `..`. At most 256 characters and 32 segments.
public struct RelayPathPattern: Sendable, Equatable {
    enum Segment: Equatable, Sendable {
        case literal(String)
        case one
        case rest
    }

    let segments: [Segment]

    public struct Invalid: Error, Equatable, Sendable {
        public let reason: String
    }

    public init(_ text: String) throws(Invalid) {
        guard text.utf8.count <= 256, text.hasPrefix("/") else { throw Invalid(reason: "must start with / and be at most 256 characters") }
        let parts = text.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count <= 32 else { throw Invalid(reason: "must have at most 32 segments") }
        var segments: [Segment] = []
        for (index, part) in parts.enumerated() {
            switch part {
            case "*": segments.append(.one)
            case "**":
                guard index == parts.count - 1 else { throw Invalid(reason: "** may only end a pattern") }
                segments.append(.rest)
            default:
                guard Self.isLiteral(part) else {
                    throw Invalid(reason: "segments are *, a final **, or 1 to 64 of A-Z a-z 0-9 - . _ ~ : @ ! $ ' ( ) + , ; = (not . or .., no %, no empty segment)")
                }
                segments.append(.literal(part))
            }
        }
        self.segments = segments
    }

    /// Whether the request path `path` (as received, before any decoding) is one this pattern allows.
    /// A path with an empty, `.` or `..` segment, or any `%`, matches nothing.
    public func matches(_ path: String) -> Bool {
        guard path.hasPrefix("/") else { return false }
        let parts = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count <= 64, parts.allSatisfy(Self.isLiteral) else { return false }
        var index = 0
        for segment in segments {
            switch segment {
            case .rest: return index < parts.count
            case .one:
                guard index < parts.count else { return false }
            case .literal(let literal):
                guard index < parts.count, parts[index] == literal else { return false }
            }
            index += 1
        }
        return index == parts.count
    }

    private static let literalBytes: Set<UInt8> = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:@!$'()+,;=".utf8))

    static func isLiteral(_ part: String) -> Bool {
        let bytes = Array(part.utf8)
        return (1...64).contains(bytes.count) && part != "." && part != ".." && bytes.allSatisfy(literalBytes.contains)
    }
}

/// The headers a relay injects into every upstream call: their values are the secrets (sealed at
/// rest, never returned or logged). At most 10, names of 1 to 64 token characters other than those
/// that frame the message or the connection, values of 1 to 8192 visible characters.
public enum RelayHeaders {
    public static let maxCount = 10
    public static let maxValueBytes = 8192
    /// Headers the relay itself writes or strips: an injected one would break framing or hop-by-hop rules.
    public static let reserved: Set<String> = [
        "host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer", "proxy-authorization",
        "proxy-authenticate", "proxy-connection", "expect",
    ]

    public static func validate(_ headers: [String: String]) throws(RelayRules.Invalid) {
        guard (1...maxCount).contains(headers.count) else {
            throw RelayRules.Invalid(field: "headers", reason: "must name 1 to \(maxCount) headers to inject")
        }
        let tokenBytes = Set(Array("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8))
        var seen: Set<String> = []
        for (name, value) in headers {
            let lowercased = name.lowercased()
            guard (1...64).contains(name.utf8.count), name.utf8.allSatisfy(tokenBytes.contains), !reserved.contains(lowercased),
                seen.insert(lowercased).inserted
            else { throw RelayRules.Invalid(field: "headers", reason: "\(name.prefix(64)) is not a header name the relay may inject") }
            // The value is not echoed: it is the secret.
            guard (1...maxValueBytes).contains(value.utf8.count), value.utf8.allSatisfy({ $0 == 0x09 || (0x20...0x7E).contains($0) }) else {
                throw RelayRules.Invalid(field: "headers", reason: "the value of \(name) must be 1 to \(maxValueBytes) visible characters")
            }
        }
    }
}

extension RelayHeaders {
    /// Hop-by-hop and framing headers (RFC 9110 §7.6.1), never forwarded in either direction: the
    /// relay frames each leg itself.
    static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer",
        "transfer-encoding", "upgrade", "host", "content-length", "expect",
    ]
    /// The caller's credentials for Sesame and anything that would identify it to the upstream
    /// beyond what it sends on purpose, and the headers some servers read as another method or URL
    /// than the request's (a relay's rules allow methods and paths): never forwarded.
    static let callerOnly: Set<String> = [
        "authorization", "cookie", "forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-real-ip",
        "x-http-method-override", "x-http-method", "x-method-override", "x-original-url", "x-rewrite-url",
    ]

    /// The headers the upstream receives: the caller's, less hop-by-hop headers (and those its
    /// `Connection` header names), its `Authorization` and `Cookie`, Sesame's own `X-Sesame-*`,
    /// and any it sends under an injected header's name; then the injected ones. The caller cannot
    /// remove or override what the relay injects.
    public static func forwarded(from caller: [(name: String, value: String)], injected: [(name: String, value: String)]) -> [(name: String, value: String)] {
        let dropped = droppedNames(in: caller).union(injected.map { $0.name.lowercased() })
        var headers = caller.filter { !dropped.contains($0.name.lowercased()) && !$0.name.lowercased().hasPrefix("x-sesame-") }
        headers.append(contentsOf: injected)
        return headers
    }

    /// Marks an answer as the upstream's (`1`), so a client tells it from Sesame's own refusals,
    /// which never carry it.
    public static let upstreamMark = "X-Sesame-Upstream"

    /// The headers the caller receives from the upstream's answer: less hop-by-hop headers,
    /// `Set-Cookie` (the upstream's session is the relay's, not the install's) and `X-Sesame-*`
    /// (the upstream cannot pass its answer off as Sesame's, or as marked); then `upstreamMark`.
    public static func returned(from upstream: [(name: String, value: String)]) -> [(name: String, value: String)] {
        let dropped = droppedNames(in: upstream, also: ["set-cookie", "set-cookie2"])
        return upstream.filter { !dropped.contains($0.name.lowercased()) && !$0.name.lowercased().hasPrefix("x-sesame-") } + [(upstreamMark, "1")]
    }

    private static func droppedNames(in headers: [(name: String, value: String)], also: Set<String> = callerOnly) -> Set<String> {
        var names = hopByHop.union(also)
        // A header the message's own Connection header lists is hop-by-hop too.
        for header in headers where header.name.lowercased() == "connection" {
            for token in header.value.split(separator: ",") { names.insert(token.trimmingCharacters(in: .whitespaces).lowercased()) }
        }
        return names
    }
}
