import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOFoundationEssentialsCompat
import Synchronization
import Testing
import WebAuthnTesting

/// A person in a browser, as the dashboard's page would act for them: a session cookie, the CSRF
/// token and the dashboard's `Origin` on every change, and a software passkey.
final class DashboardPerson: Sendable {
    let email: String
    private let client: any TestClientProtocol
    private let state: Mutex<(passkey: SoftwarePasskey, cookie: String?)>

    init(_ email: String, client: any TestClientProtocol, passkey: SoftwarePasskey = SoftwarePasskey()) {
        self.email = email
        self.client = client
        state = Mutex((passkey, nil))
    }

    var passkey: SoftwarePasskey { state.withLock { $0.passkey } }
    var sessionToken: String? { state.withLock { $0.cookie } }

    /// A request as the page makes it: with the cookie, and on a change the CSRF token and Origin;
    /// `app` names the app acted on. Keeps a cookie the answer sets.
    func call(_ method: HTTPRequest.Method, _ path: String, _ json: Any? = nil, app: String? = nil) async throws -> AdminHarness.Reply {
        var headers: HTTPFields = [.contentType: "application/json", .origin: SoftwarePasskey.origin]
        if let cookie = sessionToken { headers[.cookie] = "__Host-sesame_session=\(cookie)" }
        if let app { headers[.init("X-Sesame-App")!] = app }
        if method != .get, sessionToken != nil, path != "/dashboard/api/session" {
            let session = try await call(.get, "/dashboard/api/session")
            if let token = session["csrfToken"] as? String { headers[.init("X-CSRF-Token")!] = token }
        }
        let body = try json.map { ByteBuffer(data: try JSONSerialization.data(withJSONObject: $0)) }
        return try await client.execute(uri: path, method: method, headers: headers, body: body) { response in
            if let setCookie = response.headers[.setCookie], setCookie.hasPrefix("__Host-sesame_session=") {
                let value = setCookie.dropFirst("__Host-sesame_session=".count).prefix { $0 != ";" }
                self.state.withLock { $0.cookie = value.isEmpty ? nil : String(value) }
            }
            let data = Data(buffer: response.body)
            return AdminHarness.Reply(status: response.status, json: (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:], body: data)
        }
    }

    /// Registers this person's passkey with the invitation `token`; the reply of `register`.
    @discardableResult
    func register(invitation token: String) async throws -> AdminHarness.Reply {
        let options = try await call(.post, "/dashboard/api/register/options", ["invitation": token])
        guard options.status == .ok, let challenge = options["challenge"] as? String else { return options }
        var fields: [String: String] = passkey.registration(challenge: challenge)
        fields["invitation"] = token
        return try await call(.post, "/dashboard/api/register", fields)
    }

    /// Signs in with this person's passkey; the reply of `signin`.
    @discardableResult
    func signIn() async throws -> AdminHarness.Reply {
        let options = try await call(.post, "/dashboard/api/signin/options", [:] as [String: String])
        let challenge = try #require(options["challenge"] as? String)
        let fields = try state.withLock { try $0.passkey.assertion(challenge: challenge) }
        return try await call(.post, "/dashboard/api/signin", fields)
    }

    /// The apps of the signed-in session, sorted; nil when signed out.
    func apps() async throws -> [String]? {
        let session = try await call(.get, "/dashboard/api/session")
        guard session.status == .ok else { return nil }
        return (session["apps"] as? [[String: Any]])?.compactMap { $0["appId"] as? String }.sorted()
    }
}

extension AdminHarness {
    /// The token of a new invitation of `email` to the app `appID`, made by the operator.
    func invitation(_ email: String, to appID: String, role: String = "owner") async throws -> String {
        let parts = appID.split(separator: ".", maxSplits: 1).map(String.init)
        let invited = try await call(
            .post, "/v1/admin/accounts/invite", credential: Self.operatorToken,
            json: ["email": email, "role": role, "teamId": parts[0], "bundleId": parts[1]])
        #expect(invited.status == .ok, "\(String(decoding: invited.body, as: UTF8.self))")
        return try Self.token(ofInvitation: invited)
    }

    /// The token in an invitation answer's link.
    static func token(ofInvitation reply: Reply) throws -> String {
        let link = try #require(reply["inviteURL"] as? String)
        return String(try #require(link.split(separator: "#invite=").last))
    }

    /// A person invited to `appID` as `role` who registered a passkey and is signed in.
    func person(_ email: String, in appID: String, role: String = "owner") async throws -> DashboardPerson {
        let person = DashboardPerson(email, client: client)
        let registered = try await person.register(invitation: try await invitation(email, to: appID, role: role))
        #expect(registered.status == .ok, "\(String(decoding: registered.body, as: UTF8.self))")
        return person
    }
}
