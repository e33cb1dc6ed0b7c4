import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP exchange, as the walk sees it.
struct HTTPReply: @unchecked Sendable {
    let status: Int
    let headers: [String: String]
    let body: Data

    /// The body as a JSON object (empty when it is not one).
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
    /// `error.code` of a Sesame error body.
    var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
    var errorMessage: String? { (json["error"] as? [String: Any])?["message"] as? String }
    /// A header, by case-insensitive name.
    func header(_ name: String) -> String? { headers.first { $0.key.lowercased() == name.lowercased() }?.value }
}

/// A small HTTP client on URLSession; no cookies, no caching, no redirects followed silently.
struct HTTPClient: Sendable {
    let base: URL

    func send(
        _ method: String, _ path: String, headers: [String: String] = [:], json: [String: Any]? = nil, body: Data? = nil
    ) async throws -> HTTPReply {
        guard let url = URL(string: path, relativeTo: base) else { throw WalkFailure("bad path \(path)") }
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalAndRemoteCacheData, timeoutInterval: 30)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let json {
            request.httpBody = try JSONSerialization.data(withJSONObject: json)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        } else if let body {
            request.httpBody = body
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw WalkFailure("no HTTP response from \(url)") }
        var fields: [String: String] = [:]
        for case (let name as String, let value as String) in http.allHeaderFields { fields[name] = value }
        return HTTPReply(status: http.statusCode, headers: fields, body: data)
    }
}
