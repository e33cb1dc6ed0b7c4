import Hummingbird
import SesameDomain
import SesameHTTP
import SesameStorage

/// `GET audit?after=ID&limit=N`: the app's audit log, oldest first, a page at a time (`newest=true`: the last page);
/// `GET audit/verify?head=HASH`: whether its hash chain is intact (and still reaches a head exported before).
struct AuditRoutes {
    let authenticator: AdminAuthenticator
    let audit: AuditLog
    /// One walk of an app's chain at a time, shared by the requests that ask meanwhile.
    let verifications: AuditVerifications

    init(authenticator: AdminAuthenticator, audit: AuditLog) {
        self.authenticator = authenticator
        self.audit = audit
        verifications = AuditVerifications { appID, expectedHead in try await audit.verify(appID: appID, expectedHead: expectedHead) }
    }

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.get("audit") { request, _ -> AuditResponse in
            let (appID, _) = try await authenticator.app(of: request)
            let parameters = request.uri.queryParameters
            let after = parameters.get("after").map { Int64($0) } ?? 0
            let limit = parameters.get("limit").map { Int($0) } ?? 100
            guard let after, after >= 0 else { throw APIError.invalidField("after", "must be an entry id from a previous page") }
            guard let limit, (1...1000).contains(limit) else { throw APIError.invalidField("limit", "must be from 1 to 1000") }
            // `newest`: the last `limit` entries (still oldest first), as a page of recent activity.
            let newest = parameters.get("newest") ?? "false"
            guard newest == "true" || newest == "false" else { throw APIError.invalidField("newest", "must be true or false") }
            if newest == "true" {
                return AuditResponse(entries: try await audit.newest(appID: appID, limit: limit), next: nil)
            }
            let entries = try await audit.entries(appID: appID, after: after, limit: limit)
            return AuditResponse(entries: entries, next: entries.count == limit ? entries.last?.id : nil)
        }

        group.get("audit/verify") { request, _ -> AuditVerifyResponse in
            let (appID, _) = try await authenticator.app(of: request)
            let expectedHead = try request.uri.queryParameters.get("head").map { text in
                guard let bytes = Hex.decode(text), bytes.count == 32 else {
                    throw APIError.invalidField("head", "must be a head hash as audit/verify printed it: 64 hex digits")
                }
                return bytes
            }
            return Self.verdict(try await verifications.verify(appID: appID, expectedHead: expectedHead))
        }
    }

    static func verdict(_ chain: AuditChain.Verifier) -> AuditVerifyResponse {
        let head = chain.head.map { AuditHead(id: $0.id, hash: Hex.encode($0.hash)) }
        let reachesHead = chain.expectedHead == nil ? nil : chain.reachedExpectedHead
        let message: String
        if let broken = chain.broken {
            message = "The audit log was tampered with at entry \(broken.id): \(broken.reason)."
        } else if reachesHead == false {
            message = "The chain is intact but no longer reaches the head given: entries after it were removed, or the log was rewritten."
        } else {
            let predating = chain.predating > 0 ? " (\(chain.predating) older entries predate the chain)" : ""
            message = "The audit log is intact: \(chain.entries - chain.predating) chained entries\(predating)"
                + (head.map { "; head \($0.id) \($0.hash)" } ?? "") + "."
        }
        return AuditVerifyResponse(
            intact: chain.broken == nil && reachesHead != false, entries: chain.entries, predating: chain.predating, head: head,
            broken: chain.broken.map { AuditBreak(id: $0.id, reason: $0.reason) }, reachesHead: reachesHead, message: message)
    }
}
