import Hummingbird
import SesameHTTP
import SesameStorage

/// `GET audit?after=ID&limit=N`: the app's audit log, oldest first, a page at a time.
struct AuditRoutes {
    let authenticator: AdminAuthenticator
    let audit: AuditLog

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.get("audit") { request, _ -> AuditResponse in
            let (appID, _) = try await authenticator.app(of: request)
            let parameters = request.uri.queryParameters
            let after = parameters.get("after").map { Int64($0) } ?? 0
            let limit = parameters.get("limit").map { Int($0) } ?? 100
            guard let after, after >= 0 else { throw APIError.invalidField("after", "must be an entry id from a previous page") }
            guard let limit, (1...1000).contains(limit) else { throw APIError.invalidField("limit", "must be from 1 to 1000") }
            let entries = try await audit.entries(appID: appID, after: after, limit: limit)
            return AuditResponse(entries: entries, next: entries.count == limit ? entries.last?.id : nil)
        }
    }
}
