import Hummingbird

/// The dashboard session cookie: `HttpOnly` (no script reads it), `Secure`, `SameSite=Strict` (no
/// other site's page sends it), for the whole origin. The `__Host-` prefix makes browsers refuse
/// it unless it is Secure, for path `/` and without a `Domain`: a sibling subdomain cannot plant
/// or overwrite it.
enum DashboardCookie {
    static let name = "__Host-sesame_session"

    static func session(_ token: String) -> Cookie {
        Cookie(
            name: name, value: token, maxAge: Int(AccountStore.sessionAbsoluteLifetime.components.seconds), path: "/", secure: true,
            httpOnly: true, sameSite: .strict)
    }

    /// Tells the browser to forget the cookie.
    static var cleared: Cookie {
        Cookie(name: name, value: "", maxAge: 0, path: "/", secure: true, httpOnly: true, sameSite: .strict)
    }
}
