import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Calls the management API and turns its replies into JSON objects or `CLIFailure`s.
struct ManagementClient: Sendable {
    let baseURL: URL
    let credential: String

    /// The JSON object the server answered with on success.
    struct Reply: @unchecked Sendable {
        let object: [String: Any]
        let raw: Data

        /// The server's `message`, or `fallback`.
        func message(or fallback: String) -> String { object["message"] as? String ?? fallback }
    }

    func get(_ path: String, query: [String: String] = [:]) async throws(CLIFailure) -> Reply {
        try await send("GET", path, query: query, body: nil)
    }

    func post(_ path: String, _ body: [String: Any]) async throws(CLIFailure) -> Reply {
        try await send("POST", path, query: [:], body: body)
    }

    func delete(_ path: String, query: [String: String]) async throws(CLIFailure) -> Reply {
        try await send("DELETE", path, query: query, body: nil)
    }

    func put(_ path: String, _ body: [String: Any]) async throws(CLIFailure) -> Reply {
        try await send("PUT", path, query: [:], body: body)
    }

    /// PUTs raw bytes (a blob) with their content type.
    func put(_ path: String, data: Data, contentType: String) async throws(CLIFailure) -> Reply {
        try await send("PUT", path, query: [:], body: nil, raw: (data, contentType))
    }

    private func send(
        _ method: String, _ path: String, query: [String: String], body: [String: Any]?, raw: (Data, String)? = nil
    ) async throws(CLIFailure) -> Reply {
        var components = URLComponents(url: baseURL.appendingPathComponent("v1/admin/" + path), resolvingAgainstBaseURL: false)
        if !query.isEmpty { components?.queryItems = query.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) } }
        guard let url = components?.url else { throw CLIFailure("cannot build a URL from \(baseURL)", exitCode: 2) }
        var request = URLRequest(url: url, timeoutInterval: 60)
        request.httpMethod = method
        request.setValue("Bearer \(credential)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let data: Data
        let response: URLResponse
        do {
            if let body {
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.httpBody = try JSONSerialization.data(withJSONObject: body)
            } else if let (data, contentType) = raw {
                request.setValue(contentType, forHTTPHeaderField: "Content-Type")
                request.httpBody = data
            }
            (data, response) = try await URLSession.shared.data(for: request)
        } catch {
            throw CLIFailure(
                "cannot reach Sesame at \(baseURL.absoluteString) (\(error.localizedDescription)); check --url or SESAME_URL", exitCode: 2)
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        guard (200..<300).contains(status), let object else {
            let error = object?["error"] as? [String: Any]
            let message = error?["message"] as? String ?? "the server answered HTTP \(status)"
            // A config refused by its schema: every violation, one per line, as `config validate` prints them.
            let violations = (error?["violations"] as? [[String: Any]] ?? []).map { violation in
                "\n  \(violation["path"] as? String ?? "") \(violation["message"] as? String ?? "") [\(violation["keyword"] as? String ?? ""), \(violation["schema"] as? String ?? "")]"
            }
            throw CLIFailure(message + Self.hint(status: status) + violations.joined(), exitCode: 1)
        }
        return Reply(object: object, raw: data)
    }

    /// What to try next, for the statuses where it is not obvious.
    static func hint(status: Int) -> String {
        switch status {
        case 401: " (check SESAME_KEY: the key may be mistyped or revoked)"
        case 404: " (check the app, pattern or revision; keys only see their own app)"
        case 413: " (the file is larger than the server accepts)"
        case 429: " (wait and retry)"
        case 500...: " (a server problem; its logs have the details under the reply's request id)"
        default: ""
        }
    }
}
