import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import SesameDomain
import SesameHTTP
import SesameStorage
import WebAuthn

/// `/dashboard/api/…`: the passkey ceremonies (register from an invitation, sign in), accepting an
/// invitation as the account already signed in, the session (who is signed in, their apps and
/// roles, the CSRF token) and signing out, here or everywhere.
///
/// The ceremonies take JSON only, from the dashboard's own origin when a browser says where it
/// comes from: a hostile page can neither sign a victim in to the attacker's account nor register
/// on the victim's behalf. Invitation tokens travel in bodies, never in URLs (which logs keep).
struct DashboardAuthRoutes {
    let accounts: AccountStore
    let people: PeopleStore
    /// Nil when no dashboard origin is configured: passkeys are then refused.
    let relyingParty: WebAuthnRelyingParty?
    let clients: ClientAddressResolver
    /// The ceremonies cost a database write each: per client address, generous for people.
    let perClient = RateLimiter(.init(rate: 2, burst: 30))

    struct InvitationRequest: Decodable {
        let token: String
    }

    struct InvitationResponse: ResponseEncodable {
        let email: String
        let appId: String
        let role: AccountRole
        /// The email has an account: accept by signing in with its passkey (`invitation/accept`),
        /// not by registering a new one.
        let accountExists: Bool
    }

    struct RegisterOptionsRequest: Decodable {
        let invitation: String
    }

    struct AcceptRequest: Decodable {
        let invitation: String
    }

    /// `PublicKeyCredentialCreationOptions`, binary members as base64url.
    struct RegisterOptions: ResponseEncodable {
        struct RelyingParty: Encodable {
            let id: String
            let name: String
        }
        struct User: Encodable {
            let id: String
            let name: String
            let displayName: String
        }
        struct Parameter: Encodable {
            var type = "public-key"
            let alg: Int
        }
        struct Selection: Encodable {
            var residentKey = "required"
            var userVerification = "required"
        }
        struct Descriptor: Encodable {
            var type = "public-key"
            let id: String
        }
        let challenge: String
        let rp: RelyingParty
        let user: User
        let pubKeyCredParams: [Parameter]
        let authenticatorSelection: Selection
        /// The person's passkeys already registered, which the authenticator must not make again.
        var excludeCredentials: [Descriptor]?
        var attestation = "none"
        var timeout = 300_000
    }

    /// A new passkey's registration response (for an invitation, or a signed-in person's next device).
    struct NewPasskey: Decodable {
        let challenge: String
        let attestationObject: String
        let clientDataJSON: String
    }

    struct PasskeysResponse: ResponseEncodable {
        let passkeys: [PasskeySummary]
    }

    struct RegisterRequest: Decodable {
        let invitation: String
        let challenge: String
        let attestationObject: String
        let clientDataJSON: String
    }

    /// `PublicKeyCredentialRequestOptions` for a discoverable passkey.
    struct SignInOptions: ResponseEncodable {
        let challenge: String
        let rpId: String
        var userVerification = "required"
        var timeout = 300_000
    }

    struct SignInRequest: Decodable {
        let challenge: String
        let credentialId: String
        let authenticatorData: String
        let clientDataJSON: String
        let signature: String
    }

    struct SessionResponse: ResponseEncodable {
        struct App: Encodable {
            let appId: String
            let role: AccountRole
        }
        let email: String
        let apps: [App]
        /// Send as `X-CSRF-Token` with every change.
        let csrfToken: String
    }

    struct Done: ResponseEncodable {
        let message: String
    }

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.post("invitation") { request, context -> InvitationResponse in
            try ceremony(request, context: context)
            let body = try await request.decode(as: InvitationRequest.self, context: context)
            guard let invitation = try await accounts.invitation(body.token) else { throw DashboardErrors.invitationInvalid }
            return InvitationResponse(
                email: invitation.email, appId: invitation.appID, role: invitation.role, accountExists: invitation.accountExists)
        }

        group.post("register/options") { request, context -> RegisterOptions in
            try ceremony(request, context: context)
            let party = try relyingPartyOrRefuse()
            let body = try await request.decode(as: RegisterOptionsRequest.self, context: context)
            guard let invitation = try await accounts.invitation(body.invitation) else { throw DashboardErrors.invitationInvalid }
            guard !invitation.accountExists else { throw DashboardErrors.accountExists }
            let challenge = try await accounts.challenges(for: "register").issue()
            return Self.creationOptions(challenge: challenge, party: party, email: invitation.email)
        }

        group.post("register") { request, context -> Response in
            try ceremony(request, context: context)
            let party = try relyingPartyOrRefuse()
            let body = try await request.decode(as: RegisterRequest.self, context: context)
            let credential = try await verifiedRegistration(
                NewPasskey(challenge: body.challenge, attestationObject: body.attestationObject, clientDataJSON: body.clientDataJSON),
                ceremony: "register", party: party)
            let accountID = try Self.joined(
                try await accounts.acceptInvitation(
                    body.invitation, passkeyID: credential.id, publicKey: credential.publicKey, signCount: credential.signCount))
            return try await signedIn(accountID, replacing: request, message: "Your passkey is registered; you are signed in.")
        }

        group.post("invitation/accept") { request, context -> Response in
            let (_, session) = try await changingSession(request)
            let body = try await request.decode(as: AcceptRequest.self, context: context)
            _ = try Self.joined(try await accounts.acceptInvitation(body.invitation, as: session))
            return try Self.json(Done(message: "Invitation accepted: the app is in your list."))
        }

        group.post("signin/options") { request, context -> SignInOptions in
            try ceremony(request, context: context, takesBody: false)
            let party = try relyingPartyOrRefuse()
            return SignInOptions(challenge: Base64.urlEncode(try await accounts.challenges(for: "sign-in").issue()), rpId: party.id)
        }

        group.post("signin") { request, context -> Response in
            try ceremony(request, context: context)
            let party = try relyingPartyOrRefuse()
            let body = try await request.decode(as: SignInRequest.self, context: context)
            let challenge = try Self.bytes(body.challenge, field: "challenge")
            guard try await accounts.challenges(for: "sign-in").consume(challenge) else { throw DashboardErrors.challengeInvalid }
            let credentialID = try Self.bytes(body.credentialId, field: "credentialId")
            guard let passkey = try await accounts.passkey(credentialID) else { throw DashboardErrors.passkeyUnknown }
            let authenticatorData = try Self.bytes(body.authenticatorData, field: "authenticatorData")
            let clientDataJSON = try Self.bytes(body.clientDataJSON, field: "clientDataJSON")
            let signature = try Self.bytes(body.signature, field: "signature")
            let count: UInt32
            do throws(WebAuthnError) {
                count = try party.verifyAssertion(
                    authenticatorData: authenticatorData, clientDataJSON: clientDataJSON, signature: signature, challenge: challenge,
                    publicKey: passkey.publicKey, storedSignCount: passkey.signCount)
            } catch {
                throw DashboardErrors.passkeyRefused(error)
            }
            guard try await accounts.recordSignIn(credentialID, from: passkey.signCount, to: count) else {
                throw DashboardErrors.passkeyRefused(WebAuthnError(.signCount, "another sign-in used this count first"))
            }
            return try await signedIn(passkey.accountID, replacing: request, message: "Signed in.")
        }

        group.get("passkeys") { request, _ -> Response in
            let (_, session) = try await currentSession(request)
            return try Self.json(PasskeysResponse(passkeys: try await people.passkeys(of: session.email)))
        }

        group.post("passkeys/options") { request, _ -> RegisterOptions in
            let (_, session) = try await changingSession(request)
            let party = try relyingPartyOrRefuse()
            let existing = try await people.passkeys(of: session.email)
            let challenge = try await accounts.challenges(for: "add-passkey").issue()
            var options = Self.creationOptions(challenge: challenge, party: party, email: session.email)
            options.excludeCredentials = existing.map { .init(id: $0.credentialId) }
            return options
        }

        group.post("passkeys") { request, context -> Response in
            let (_, session) = try await changingSession(request)
            let party = try relyingPartyOrRefuse()
            let body = try await request.decode(as: NewPasskey.self, context: context)
            let credential = try await verifiedRegistration(body, ceremony: "add-passkey", party: party)
            guard
                try await people.addPasskey(
                    credential.id, publicKey: credential.publicKey, signCount: credential.signCount, to: session.accountID, email: session.email)
            else { throw DashboardErrors.passkeyExists }
            return try Self.json(Done(message: "Passkey added: sign in with either from now on."))
        }

        group.delete("passkeys/{credentialId}") { request, context -> Response in
            let (token, session) = try await changingSession(request)
            let credentialID = try Self.bytes(context.parameters.get("credentialId") ?? "", field: "credentialId")
            try AccountRoutes.check(
                try await people.revokePasskey(credentialID, of: session.email, actor: "account:\(session.email)", keepingSession: token))
            return try Self.json(Done(message: "Passkey revoked; your other sessions have ended."))
        }

        group.get("session") { request, _ -> Response in
            let (token, session) = try await currentSession(request)
            // no-store: the answer carries the CSRF token and who is signed in.
            return try Self.json(
                SessionResponse(
                    email: session.email, apps: session.roles.sorted { $0.key < $1.key }.map { .init(appId: $0.key, role: $0.value) },
                    csrfToken: DashboardCSRF.token(forSession: token)))
        }

        group.post("signout") { request, _ -> Response in
            let (token, _) = try await changingSession(request)
            try await accounts.endSession(token)
            return try Self.signedOut("Signed out.")
        }

        group.post("signout-everywhere") { request, _ -> Response in
            let (_, session) = try await changingSession(request)
            try await accounts.endAllSessions(of: session.accountID)
            return try Self.signedOut("Signed out of every browser.")
        }
    }

    /// What every unauthenticated ceremony checks first: the client's rate limit, a browser's
    /// `Origin` (sent with every cross-origin POST) naming the dashboard, and a JSON body where it
    /// takes one.
    private func ceremony(_ request: Request, context: SesameRequestContext, takesBody: Bool = true) throws {
        try perClient.enforce(clients.limitKey(of: request, context: context))
        try DashboardCSRF.checkCeremony(request, origin: relyingParty?.origins.first, takesBody: takesBody)
    }

    /// The account an acceptance joined, or its refusal.
    private static func joined(_ acceptance: AccountStore.Acceptance) throws -> UUID {
        switch acceptance {
        case .joined(let accountID): accountID
        case .invalid: throw DashboardErrors.invitationInvalid
        case .accountExists: throw DashboardErrors.accountExists
        case .wrongAccount: throw DashboardErrors.invitationForAnotherAccount
        }
    }

    private func relyingPartyOrRefuse() throws -> WebAuthnRelyingParty {
        guard let relyingParty else { throw DashboardErrors.notConfigured }
        return relyingParty
    }

    /// The signed-in session the request's cookie names, and its token.
    private func currentSession(_ request: Request) async throws -> (String, DashboardSession) {
        guard let token = request.cookies[DashboardCookie.name]?.value, let session = try await accounts.session(token) else {
            throw AdminErrors.sessionExpired
        }
        return (token, session)
    }

    /// The session a change is made in, after the CSRF check every change makes.
    private func changingSession(_ request: Request) async throws -> (String, DashboardSession) {
        let (token, session) = try await currentSession(request)
        try DashboardCSRF.check(request, sessionToken: token, origin: relyingParty?.origins.first)
        return (token, session)
    }

    /// The credential a registration response makes, once its challenge of `ceremony` is spent
    /// and every WebAuthn check passes.
    private func verifiedRegistration(_ body: NewPasskey, ceremony: String, party: WebAuthnRelyingParty) async throws
        -> WebAuthnRelyingParty.Credential
    {
        let challenge = try Self.bytes(body.challenge, field: "challenge")
        guard try await accounts.challenges(for: ceremony).consume(challenge) else { throw DashboardErrors.challengeInvalid }
        let attestationObject = try Self.bytes(body.attestationObject, field: "attestationObject")
        let clientDataJSON = try Self.bytes(body.clientDataJSON, field: "clientDataJSON")
        do throws(WebAuthnError) {
            return try party.verifyRegistration(attestationObject: attestationObject, clientDataJSON: clientDataJSON, challenge: challenge)
        } catch {
            throw DashboardErrors.passkeyRefused(error)
        }
    }

    /// `PublicKeyCredentialCreationOptions` for `email`'s passkey, under a user handle stable per
    /// email, so that a person's second passkey replaces nothing on their authenticator.
    private static func creationOptions(challenge: [UInt8], party: WebAuthnRelyingParty, email: String) -> RegisterOptions {
        let handle = Base64.urlEncode(SHA256.hash(data: Data(email.utf8)).prefix(16))
        return RegisterOptions(
            challenge: Base64.urlEncode(challenge), rp: .init(id: party.id, name: "Sesame"),
            user: .init(id: handle, name: email, displayName: email), pubKeyCredParams: [.init(alg: -7)], authenticatorSelection: .init())
    }

    /// Starts a session for `accountID`; a session the browser still held ends, so one browser
    /// never holds two (and a cookie planted before the sign-in is worth nothing after it).
    private func signedIn(_ accountID: UUID, replacing request: Request, message: String) async throws -> Response {
        if let previous = request.cookies[DashboardCookie.name]?.value { try await accounts.endSession(previous) }
        let token = try await accounts.startSession(for: accountID)
        var response = try Self.json(Done(message: message))
        response.setCookie(DashboardCookie.session(token))
        return response
    }

    private static func signedOut(_ message: String) throws -> Response {
        var response = try json(Done(message: message))
        response.setCookie(DashboardCookie.cleared)
        return response
    }

    /// A JSON answer that no cache keeps, dates in ISO 8601 as every answer of the API has them.
    private static func json(_ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }

    /// The bytes of a base64url field of a WebAuthn response; far above any real one.
    static func bytes(_ text: String, field: String) throws -> [UInt8] {
        try APIError.decodeBase64(text, field: field, maxCharacters: 16 * 1024)
    }
}
