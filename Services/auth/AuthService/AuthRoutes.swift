import Foundation
import Hummingbird
import SesameHTTP
import SesameTokens

/// Under `v1/auth`: `POST challenge`, `attest`, `refresh`, `debug`, `unattested`, `attestation-failure` and `api-token`,
/// each behind its per-client rate limit, and `GET jwks`; the same key set at
/// `/.well-known/jwks.json`.
struct AuthRoutes {
    let flows: AuthFlows
    let tiers: TierAdmission
    let apiTokens: APITokenIssuer
    let limits: AuthLimits
    let clients: ClientAddressResolver
    let tokens: TokenAuthority

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.post("challenge") { request, context in
            try limits.challengePerClient.enforce(clients.limitKey(of: request, context: context))
            // The body is optional: an empty one asks for the nonce alone.
            let body = try await request.body.collect(upTo: context.maxUploadSize)
            guard body.readableBytes > 0 else { return try await flows.challenge(for: nil) }
            guard let app = try? JSONDecoder().decode(ChallengeRequest.self, from: Data(body.readableBytesView)) else {
                throw APIError(.badRequest, code: CommonErrorCode.invalidBody, message: "The request body is not valid JSON of the expected shape.")
            }
            for (field, value) in [("teamId", app.teamId), ("bundleId", app.bundleId)] where value?.isEmpty == true {
                throw APIError.invalidField(field, "must not be empty")
            }
            return try await flows.challenge(for: app)
        }
        group.post("attest") { request, context in
            try limits.attestPerClient.enforce(clients.limitKey(of: request, context: context))
            return try await flows.attest(try await request.decode(as: AttestRequest.self, context: context))
        }
        group.post("refresh") { request, context in
            try limits.refreshPerClient.enforce(clients.limitKey(of: request, context: context))
            return try await flows.refresh(try await request.decode(as: RefreshRequest.self, context: context))
        }
        group.post("debug") { request, context in
            try limits.debugPerClient.enforce(clients.limitKey(of: request, context: context))
            return try await tiers.exchangeDebugToken(try await request.decode(as: DebugTokenRequest.self, context: context))
        }
        group.post("unattested") { request, context in
            try limits.unattestedPerClient.enforce(clients.limitKey(of: request, context: context))
            return try await tiers.admitUnattested(try await request.decode(as: UnattestedRequest.self, context: context))
        }
        group.post("attestation-failure") { request, context in
            try limits.failureReportPerClient.enforce(clients.limitKey(of: request, context: context))
            try await tiers.reportFailure(try await request.decode(as: AttestationFailureReport.self, context: context))
            return HTTPResponse.Status.noContent
        }
        group.post("api-token") { request, context in
            try limits.apiTokenPerClient.enforce(clients.limitKey(of: request, context: context))
            return try await apiTokens.issue(try await request.decode(as: APITokenRequest.self, context: context), accessToken: request.bearerCredential)
        }
        group.get("jwks") { _, _ in try await jwks() }
    }

    /// Adds `GET .well-known/jwks.json`, where JWT verifiers look first.
    func addWellKnownRoutes(to routes: some RouterMethods<SesameRequestContext>) {
        routes.get(".well-known/jwks.json") { _, _ in try await jwks() }
    }

    /// The public keys tokens are signed with.
    private func jwks() async throws -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        // Verifiers may cache briefly; a rotated key is published before it signs anything.
        headers[.cacheControl] = "public, max-age=300"
        let body = try JSONEncoder().encode(try await tokens.jwks())
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}
