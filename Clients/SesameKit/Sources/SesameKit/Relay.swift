import Foundation
import SesameRelayProof

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An attested relay (`docs/relay.md`): a third-party API called through Sesame, which checks this
/// install as it checks a config fetch and adds the API's key on the server, so the key never
/// reaches the device.
///
/// Point a third-party SDK at `baseURL` with `authorizationHeader()` (or `token()`) as its
/// credential, or send requests with `data(for:)` and `bytes(for:)`, which renew the token as
/// needed. The upstream's answers come back as they are, whatever their status; Sesame's own
/// refusals (a quota, a revoked install, a path the relay does not allow) are thrown as
/// `SesameError`.
public struct SesameRelay: Sendable {
    /// What each call carries besides the access token, as the relay's rules (`proof`) ask.
    public enum Proof: Sendable, Equatable {
        /// The access token alone.
        case none
        /// A single-use API token for this relay, bound to the call (its method, path, query and
        /// body), spent by it: a captured call cannot be replayed or changed.
        case limitedUseToken
        /// An App Attest assertion by this install's key over the call (its method, path, query
        /// and body): each passes once. Calls that carry one must reach Sesame in the order they
        /// were made (the key's counter only moves forward): send them one at a time.
        case assertion
    }

    /// The relay's name, as its owner made it (`sesame relays set`).
    public let name: String
    /// What each call carries besides the access token.
    public let proof: Proof
    /// `…/v1/relay/{name}`: the upstream's base URL, as the app sees it. A request to
    /// `baseURL/v1/chat/completions` reaches the upstream's `/v1/chat/completions`.
    public let baseURL: URL
    let client: SesameClient

    /// A current access token, attesting or refreshing first when needed. It lives minutes: ask
    /// again for each call (an SDK that takes a fixed key can be made per call).
    public func token() async throws(SesameError) -> String {
        try await client.accessToken()
    }

    /// `Bearer <token()>`, for an SDK that takes a whole `Authorization` header.
    public func authorizationHeader() async throws(SesameError) -> String {
        "Bearer " + (try await token())
    }

    /// Sends `request` (its URL under `baseURL`) with a current token and returns the upstream's
    /// answer. A token Sesame refuses is renewed and the request sent once more.
    /// - Throws: `SesameError` for Sesame's refusals (`.rateLimited` for a quota, with its wait;
    ///   `.server(code: "relay_path_not_allowed", …)`, …) and when no answer arrived (`.network`).
    public func data(for request: URLRequest) async throws(SesameError) -> (Data, HTTPURLResponse) {
        let exchange = try exchange(for: request)
        for attempt in 0..<2 {
            let token = try await token()
            let sent = try await prepared(exchange, token: token)
            let response: HTTPExchange.Response
            do { response = try await client.api.transport.send(sent) } catch {
                throw SesameAPI.networkFailure(error)
            }
            if Self.isUpstreams(response) { return (response.body, try Self.urlResponse(response, url: sent.url)) }
            if response.status == 401, attempt == 0 {
                await client.discard(token)
                continue
            }
            throw SesameClient.refused(response)
        }
        throw .network(underlying: "no answer")
    }

    /// Sends `request` like `data(for:)` and returns the answer's body as it arrives (a model's
    /// tokens as the upstream streams them). Without a streaming transport the body arrives whole.
    /// Cancelling the iteration closes the connection. A stream Sesame stops mid-way (the install
    /// revoked, the call's time up) ends, for an event stream, with a `sesame-relay-ended` event
    /// whose data says why.
    public func bytes(for request: URLRequest) async throws(SesameError) -> (AsyncThrowingStream<Data, any Error>, HTTPURLResponse) {
        guard let streaming = client.api.transport as? any HTTPStreamingTransport else {
            let (data, response) = try await data(for: request)
            return (AsyncThrowingStream { $0.yield(data); $0.finish() }, response)
        }
        let exchange = try exchange(for: request)
        for attempt in 0..<2 {
            let token = try await token()
            let sent = try await prepared(exchange, token: token)
            let head: HTTPExchange.Response
            let body: AsyncThrowingStream<Data, any Error>
            do { (head, body) = try await streaming.stream(sent) } catch {
                throw SesameAPI.networkFailure(error)
            }
            if Self.isUpstreams(head) { return (body, try Self.urlResponse(head, url: sent.url)) }
            // Sesame's refusal: read its few bytes to say why.
            var refusal = head
            do { for try await chunk in body where refusal.body.count < 16_384 { refusal.body.append(chunk) } } catch {}
            if head.status == 401, attempt == 0 {
                await client.discard(token)
                continue
            }
            throw SesameClient.refused(refusal)
        }
        throw .network(underlying: "no answer")
    }

    /// `exchange` with the access token and the proof the relay asks for.
    private func prepared(_ exchange: HTTPExchange.Request, token: String) async throws(SesameError) -> HTTPExchange.Request {
        var sent = exchange
        sent.headers["authorization"] = "Bearer " + token
        switch proof {
        case .none: break
        case .limitedUseToken:
            let call = try statement(of: exchange)
            sent.headers["x-sesame-limited-use-token"] =
                try await client.limitedUseToken(for: RelayCallStatement.audience(relay: name), boundTo: call.clientData).token
        case .assertion:
            sent.headers["x-sesame-assertion"] = try await client.assertion(for: statement(of: exchange).clientData).assertion.base64EncodedString()
        }
        return sent
    }

    /// What a proof for `exchange` vouches for: its path and query as they go on the wire, after
    /// `baseURL`'s path, as delivery reads them after `/v1/relay/{name}`.
    func statement(of exchange: HTTPExchange.Request) throws(SesameError) -> RelayCallStatement {
        guard let sent = URLComponents(url: exchange.url, resolvingAgainstBaseURL: false),
            let base = URLComponents(url: baseURL, resolvingAgainstBaseURL: false), sent.percentEncodedPath.hasPrefix(base.percentEncodedPath)
        else {
            throw .server(code: "relay_url_outside", message: "The request's URL is not under the relay's base URL \(baseURL.absoluteString).")
        }
        return RelayCallStatement(
            method: exchange.method, relay: name, path: String(sent.percentEncodedPath.dropFirst(base.percentEncodedPath.count)),
            query: sent.percentEncodedQuery, body: exchange.body ?? Data())
    }

    /// Whether `response` is the upstream's (Sesame marks those), not Sesame's own refusal.
    static func isUpstreams(_ response: HTTPExchange.Response) -> Bool {
        response.headers["x-sesame-upstream"] == "1"
    }

    /// `request` as SesameKit's transport sends it; its URL must lie under `baseURL`.
    private func exchange(for request: URLRequest) throws(SesameError) -> HTTPExchange.Request {
        guard let url = request.url, url.absoluteString.hasPrefix(baseURL.absoluteString + "/") || url == baseURL else {
            throw .server(code: "relay_url_outside", message: "The request's URL is not under the relay's base URL \(baseURL.absoluteString).")
        }
        var headers: [String: String] = [:]
        for (name, value) in request.allHTTPHeaderFields ?? [:] { headers[name.lowercased()] = value }
        return HTTPExchange.Request(method: request.httpMethod ?? "GET", url: url, headers: headers, body: request.httpBody)
    }

    private static func urlResponse(_ response: HTTPExchange.Response, url: URL) throws(SesameError) -> HTTPURLResponse {
        guard let http = HTTPURLResponse(url: url, statusCode: response.status, httpVersion: "HTTP/1.1", headerFields: response.headers) else {
            throw .server(code: "invalid_response", message: "The relay's answer cannot be read.")
        }
        return http
    }
}

extension SesameClient {
    /// The attested relay `name`, under this client's Sesame; each call carries `proof` (as the
    /// relay's rules ask). Nothing is sent until it is used.
    public nonisolated func relay(_ name: String, proof: SesameRelay.Proof = .none) -> SesameRelay {
        SesameRelay(
            name: name, proof: proof, baseURL: configuration.baseURL.appendingPathComponent("v1/relay").appendingPathComponent(name), client: self)
    }
}
