import Foundation

/// Sesame's HTTP API as SesameKit calls it: requests built in one place, failures read in one place.
struct SesameAPI: Sendable {
    let baseURL: URL
    let transport: any HTTPTransport

    /// `{"error": {"code": …, "message": …}}`, as every Sesame service refuses.
    struct Refusal: Decodable, Sendable {
        struct Detail: Decodable, Sendable {
            let code: String
            let message: String
        }
        let error: Detail
    }

    /// The request for `path` under the base URL with `query`.
    func request(_ method: String, _ path: String, query: [URLQueryItem] = [], headers: [String: String] = [:]) throws(SesameError)
        -> HTTPExchange.Request
    {
        var components = URLComponents(url: baseURL.appendingPathComponent(path), resolvingAgainstBaseURL: false)
        if !query.isEmpty { components?.queryItems = query }
        guard let url = components?.url else { throw SesameError.network(underlying: "cannot form a URL from \(baseURL)") }
        return HTTPExchange.Request(method: method, url: url, headers: headers)
    }

    /// Sends a request; a transport failure becomes `SesameError.network`.
    func send(
        _ method: String, _ path: String, query: [URLQueryItem] = [], json: (any Encodable & Sendable)? = nil,
        headers: [String: String] = [:]
    ) async throws(SesameError) -> HTTPExchange.Response {
        var request = try request(method, path, query: query, headers: headers)
        if let json {
            request.headers["content-type"] = "application/json"
            do { request.body = try JSONEncoder().encode(json) } catch { throw SesameError.network(underlying: "cannot encode the request") }
        }
        return try await deliver(request)
    }

    /// Sends a request to `relative` (a path with its query, as Sesame hands out links) under the base URL.
    func send(_ method: String, relative: String, headers: [String: String] = [:]) async throws(SesameError) -> HTTPExchange.Response {
        let base = baseURL.absoluteString.hasSuffix("/") ? String(baseURL.absoluteString.dropLast()) : baseURL.absoluteString
        guard relative.hasPrefix("/"), let url = URL(string: base + relative) else {
            throw SesameError.server(code: "invalid_response", message: "Sesame sent a link that is not a path.")
        }
        return try await deliver(HTTPExchange.Request(method: method, url: url, headers: headers))
    }

    /// Sends `request`; a transport failure becomes `SesameError.network`.
    private func deliver(_ request: HTTPExchange.Request) async throws(SesameError) -> HTTPExchange.Response {
        do {
            return try await transport.send(request)
        } catch {
            throw Self.networkFailure(error)
        }
    }

    /// A transport's failure, as SesameKit reports it: no answer arrived.
    static func networkFailure(_ error: any Error) -> SesameError {
        .network(underlying: String(describing: type(of: error)) + ": " + error.localizedDescription)
    }

    /// The code and message of a refusal; a body that is not Sesame's becomes `http_<status>`.
    static func refusal(of response: HTTPExchange.Response) -> (code: String, message: String) {
        if let refusal = try? JSONDecoder().decode(Refusal.self, from: response.body) {
            return (refusal.error.code, refusal.error.message)
        }
        return ("http_\(response.status)", "Sesame answered HTTP \(response.status).")
    }

    /// How long `Retry-After` asks to wait, plus up to a second of jitter so a fleet of apps told
    /// to wait does not come back in step. Nil without a usable header.
    static func retryAfter(of response: HTTPExchange.Response) -> Duration? {
        guard let text = response.headers["retry-after"], let seconds = Int(text.trimmingCharacters(in: .whitespaces)), seconds >= 0
        else { return nil }
        return .seconds(seconds) + .milliseconds(Int.random(in: 0..<1000))
    }
}

/// The bodies of the auth flows.
enum AuthMessages {
    struct Challenge: Decodable, Sendable {
        let nonce: String
        /// The app's attestation ramp (percent), when asked with the app and it has one.
        let attestationRamp: Double?
        /// True when asked with the app and it bans devices: an attest must carry a DeviceCheck token.
        let deviceTokenRequired: Bool?
    }

    /// A challenge's optional body: the app, to learn its attestation ramp.
    struct ChallengeRequest: Encodable, Sendable {
        let teamId: String
        let bundleId: String
    }

    struct Attest: Encodable, Sendable {
        let attestationObject: String
        let keyId: String
        let nonce: String
        let teamId: String
        let bundleId: String
        let appVersion: String
        /// Base64 of the device's DeviceCheck token; absent where there is none.
        let deviceToken: String?
    }

    struct Refresh: Encodable, Sendable {
        let refreshToken: String
        let assertion: String
        let clientData: String
        let appVersion: String
    }

    struct ClientData: Encodable, Sendable {
        let challenge: String
    }

    struct DebugExchange: Encodable, Sendable {
        let debugToken: String
        let teamId: String
        let bundleId: String
        let appVersion: String
    }

    struct Unattested: Encodable, Sendable {
        let nonce: String
        let teamId: String
        let bundleId: String
        let appVersion: String
        /// Why this install asks for the unattested tier (`unsupported`, `outsideRamp`); sent once a launch.
        var reason: String?
    }

    /// `POST v1/auth/attestation-failure`: an attestation that failed on the device, with its unspent challenge.
    struct AttestationFailure: Encodable, Sendable {
        let nonce: String
        let teamId: String
        let bundleId: String
        /// `serverUnavailable` (Apple's rate limit, after the retries) or `failed`.
        let reason: String
    }

    /// An attested pair, or an access token alone (the debug and unattested tiers).
    struct Tokens: Decodable, Sendable {
        let accessToken: String
        let refreshToken: String?
        let expiresIn: Int
    }
}
