import HTTPTypes
import Hummingbird
import SesameHTTP

/// `GET /dashboard` (the page), `/dashboard/app.js`, `/dashboard/app.css` and its icon, each with the
/// headers that keep the dashboard's origin to itself: a CSP that allows only its own script and
/// style (no inline script) and no framing, no MIME sniffing, no referrer.
struct DashboardPageRoutes {
    static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy:
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        .xContentTypeOptions: "nosniff",
        HTTPField.Name("Referrer-Policy")!: "no-referrer",
        HTTPField.Name("X-Frame-Options")!: "DENY",
        .cacheControl: "no-store",
        HTTPField.Name("Cross-Origin-Opener-Policy")!: "same-origin",
    ]

    func addRoutes(to routes: some RouterMethods<SesameRequestContext>) {
        // The router treats `/dashboard` and `/dashboard/` as one path.
        routes.get("dashboard") { _, _ in Self.asset(DashboardAssets.indexHTML, type: "text/html; charset=utf-8") }
        routes.get("dashboard/app.js") { _, _ in Self.asset(DashboardAssets.appJS, type: "text/javascript; charset=utf-8") }
        routes.get("dashboard/app.css") { _, _ in Self.asset(DashboardAssets.styleCSS, type: "text/css; charset=utf-8") }
        routes.get("dashboard/favicon.svg") { _, _ in Self.asset(DashboardAssets.faviconSVG, type: "image/svg+xml") }
    }

    static func asset(_ text: String, type: String) -> Response {
        var headers = securityHeaders
        headers[.contentType] = type
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
