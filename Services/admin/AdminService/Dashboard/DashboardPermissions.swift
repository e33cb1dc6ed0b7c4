import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import SesameDomain
import SesameHTTP

/// What each dashboard role may do through the management API: every role reads; editors change
/// what apps are served (configs, kill switches, revocations, blobs); owners also hold the keys
/// to the app (provisioning keys, debug tokens, devices, pins, the policy, people, and relays, whose
/// injected headers are the keys of paid APIs).
enum DashboardPermissions {
    /// The management paths (under `/v1/admin/`) only owners may change.
    static let ownerOnly = ["keys", "backend-keys", "debug-tokens", "devices", "policy", "accounts", "pins", "webhooks", "apple", "relays"]

    static func isRead(_ method: HTTPRequest.Method) -> Bool { method == .get || method == .head }

    /// The least role that may make this request.
    static func requiredRole(method: HTTPRequest.Method, path: String) -> AccountRole {
        if isRead(method) { return .viewer }
        let segments = path.split(separator: "/")
        guard segments.count >= 3, segments[0] == "v1", segments[1] == "admin" else { return .owner }
        return ownerOnly.contains(String(segments[2])) ? .owner : .editor
    }
}

/// The CSRF defence of session-authenticated changes: the `X-CSRF-Token` header must carry the
/// session's token, which only the dashboard's own pages can read (from `GET /dashboard/api/session`),
/// and a browser's `Origin` must be the dashboard's. The cookie is `SameSite=Strict` besides.
enum DashboardCSRF {
    /// The session's CSRF token: derived from the session token, so nothing more is stored, and it
    /// gives nothing of the session token away.
    static func token(forSession session: String) -> String {
        Base64.urlEncode(SHA256.hash(data: Data(("sesame dashboard csrf\u{0}" + session).utf8)))
    }

    /// The check of an unauthenticated passkey ceremony (no session yet, so no CSRF token): when
    /// a browser names the page's origin, the dashboard's; and a JSON body (`takesBody`), which no
    /// HTML form can send. Stops login CSRF: a hostile page signing a victim in to the attacker's
    /// account.
    static func checkCeremony(_ request: Request, origin: String?, takesBody: Bool) throws {
        if let sent = request.headers[.origin], sent != origin { throw DashboardErrors.originRefused }
        let mediaType = request.headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        if takesBody, mediaType != "application/json" { throw APIError.forStatus(.unsupportedMediaType) }
    }

    static func check(_ request: Request, sessionToken: String, origin: String?) throws {
        if let sent = request.headers[.origin], sent != origin { throw AdminErrors.csrfRefused }
        guard let presented = request.headers[SesameHeaders.csrfToken],
            ConstantTime.equals(Array(presented.utf8), Array(token(forSession: sessionToken).utf8))
        else { throw AdminErrors.csrfRefused }
    }
}
