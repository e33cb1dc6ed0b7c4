import Foundation
import HTTPTypes
import Testing

@testable import AdminService

/// The dashboard's rules that need no browser: who may change what, the CSRF token, and that the
/// assets served are the ones in `Dashboard/Assets`.
@Suite("Dashboard rules")
struct DashboardRulesTests {
    @Test("reads need a viewer; changes to what apps are served an editor; keys, tokens, devices, policy, people and relays an owner")
    func permissions() {
        #expect(DashboardPermissions.requiredRole(method: .get, path: "/v1/admin/keys") == .viewer)
        #expect(DashboardPermissions.requiredRole(method: .post, path: "/v1/admin/config/upload") == .editor)
        #expect(DashboardPermissions.requiredRole(method: .post, path: "/v1/admin/kill-switch") == .editor)
        #expect(DashboardPermissions.requiredRole(method: .put, path: "/v1/admin/blob/model.bin") == .editor)
        for path in [
            "/v1/admin/keys/create", "/v1/admin/keys/revoke", "/v1/admin/backend-keys", "/v1/admin/debug-tokens", "/v1/admin/devices/revoke",
            "/v1/admin/accounts/invite",
        ] {
            #expect(DashboardPermissions.requiredRole(method: .post, path: path) == .owner, "\(path)")
        }
        #expect(DashboardPermissions.requiredRole(method: .put, path: "/v1/admin/policy") == .owner)
        // A relay's headers are the key of a paid API; its upstream decides where they go (issue 72).
        #expect(DashboardPermissions.requiredRole(method: .put, path: "/v1/admin/relays/openai") == .owner)
        #expect(DashboardPermissions.requiredRole(method: .delete, path: "/v1/admin/relays/openai") == .owner)
        #expect(DashboardPermissions.requiredRole(method: .delete, path: "/v1/admin/debug-tokens/ci") == .owner)
        #expect(DashboardPermissions.requiredRole(method: .delete, path: "/v1/admin/backend-keys/0bd1") == .owner)
        // Anything not under the management API is an owner's, never a viewer's by accident.
        #expect(DashboardPermissions.requiredRole(method: .post, path: "/elsewhere") == .owner)
        #expect(AccountRole.viewer < .editor && AccountRole.editor < .owner)
    }

    @Test("the CSRF token is fixed per session, differs between sessions and is not the session token")
    func csrfToken() {
        let session = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        let token = DashboardCSRF.token(forSession: session)
        #expect(token == DashboardCSRF.token(forSession: session))
        #expect(token != DashboardCSRF.token(forSession: String(session.dropLast()) + "b"))
        #expect(!token.contains(session) && token.count == 43)
    }

    @Test("the dashboard serves the files in Dashboard/Assets as they are (embedded by the EmbedFiles plugin)")
    func embeddedAssets() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Services/admin/AdminService/Dashboard/Assets").standardizedFileURL
        for (embedded, file) in [(DashboardAssets.indexHTML, "index.html"), (DashboardAssets.appJS, "app.js"), (DashboardAssets.styleCSS, "style.css")] {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            #expect(embedded == text.trimmingCharacters(in: .newlines), "\(file) is not served as it is")
        }
        // No inline script anywhere the CSP would have to allow it.
        #expect(!DashboardAssets.indexHTML.contains("<script>") && !DashboardAssets.indexHTML.contains("onclick="))
    }
}
