import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP exchange, as SesameKit needs it.
public struct HTTPExchange: Sendable {
    /// A request.
    public struct Request: Sendable {
        /// `GET`, `POST`, `PUT`.
        public var method: String
        /// The whole address, query included.
        public var url: URL
        /// Header names in lowercase.
        public var headers: [String: String]
        /// The body, if any.
        public var body: Data?

        /// A request.
        public init(method: String, url: URL, headers: [String: String] = [:], body: Data? = nil) {
            self.method = method
            self.url = url
            self.headers = headers
            self.body = body
        }
    }

    /// A response.
    public struct Response: Sendable {
        /// The HTTP status code.
        public var status: Int
        /// Header names in lowercase.
        public var headers: [String: String]
        /// The body, empty when there is none.
        public var body: Data

        /// A response; header names are lowercased.
        public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
            self.status = status
            self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
            self.body = body
        }
    }
}

/// Sends HTTP requests: `URLSessionTransport` in an app, a scripted one in tests.
public protocol HTTPTransport: Sendable {
    /// Sends `request`; throws only when no response arrived (the network failed).
    func send(_ request: HTTPExchange.Request) async throws -> HTTPExchange.Response
}

/// `HTTPTransport` over `URLSession`.
public struct URLSessionTransport: HTTPTransport {
    let session: URLSession

    /// Uses `session`; by default an ephemeral session with no URL cache and no cookies, so
    /// nothing of Sesame's (configs, tokens) is kept by URLSession, not even in memory.
    public init(session: URLSession = URLSession(configuration: URLSessionTransport.uncachedConfiguration)) {
        self.session = session
    }

    /// An ephemeral configuration without a URL cache or cookie storage: `.ephemeral` alone still
    /// caches responses in memory.
    public static var uncachedConfiguration: URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        return configuration
    }

    public func send(_ request: HTTPExchange.Request) async throws -> HTTPExchange.Response {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        urlRequest.httpBody = request.body
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await session.data(for: urlRequest)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return HTTPExchange.Response(status: http.statusCode, headers: headers, body: data)
    }
}
