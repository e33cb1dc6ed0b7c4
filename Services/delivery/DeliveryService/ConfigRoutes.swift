import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import SesameDomain
import SesameHTTP
import SesameTokens

/// `GET /v1/config?version=2.1.3[&scope=a.b,c]`: the config an app at that version gets, from
/// memory, less the top-level keys the caller's trust tier may not see (named in `withheld`).
struct ConfigRoutes: Sendable {
    let gate: AccessGate
    /// Where the installs each rollout reached are counted.
    let installCounts: RolloutInstallCounts

    /// Adds `GET` to the `v1/config` group.
    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.get { request, context in try await respond(to: request, context: context) }
    }

    func respond(to request: Request, context: SesameRequestContext, now: Date = Date()) async throws -> Response {
        let query = try Query(request.uri)
        let caller = try await gate.authenticate(request, context: context)
        let answer = try answer(query, caller: caller, ifNoneMatch: request.headers[.ifNoneMatch], now: now)
        return Response(status: answer.status, headers: answer.headers, body: .init(byteBuffer: answer.body))
    }

    /// What a request asks for: the app version, and the dot paths it wants if not the whole config.
    struct Query: Sendable {
        let version: AppVersion
        let scope: String?

        /// Reads the query of `uri`; `invalid_version` when the version is missing or malformed.
        init(_ uri: URI) throws {
            guard let requested = uri.queryParameters.get("version"), let version = AppVersion(requested) else {
                throw DeliveryErrors.invalidVersion
            }
            self.version = version
            scope = uri.queryParameters.get("scope")
        }
    }

    /// An answer of this route: status, headers and body (empty for a 304).
    struct Answer {
        let status: HTTPResponse.Status
        let headers: HTTPFields
        let body: ByteBuffer
    }

    /// Thrown instead of parsing a config on the event loop: the router answers the request.
    struct NotOnEventLoop: Error {}

    /// The answer to an authenticated caller's `query`, from memory: the router's route and the
    /// event loop's fast path (`ConfigFastPath`) both answer with it. Throws the refusal, or
    /// `NotOnEventLoop` when `mayParse` is false and the answer needs a parse.
    func answer(_ query: Query, caller: AccessGate.Authenticated, ifNoneMatch: String?, now: Date, mayParse: Bool = true) throws -> Answer {
        let version = query.version
        let served: ServedConfig
        let refreshAfter: Int?
        let decision: AppRelease<ServedConfig>.Decision
        switch caller.state.release.resolve(version: version, token: caller.token, now: now) {
        case .serve(let config, _, let hint, let decided): (served, refreshAfter, decision) = (config, hint, decided)
        case .disabled(let reason): throw APIError.versionDisabled(reason)
        case .revoked: throw DeliveryErrors.tokenRevoked
        case .noConfig: throw DeliveryErrors.noConfig(version.text)
        }

        let tier = caller.claims.trustTier
        guard let view = served.view(for: tier) else { throw DeliveryErrors.tierInsufficient("Zero-knowledge configs are", required: .attested) }
        let config: [UInt8]
        let etag: String
        if let scope = query.scope {
            guard !served.zeroKnowledge else { throw DeliveryErrors.scopeUnavailable }
            do {
                let cut = try view.scoped.cut(scope, of: view.body, revision: served.revision, mayParse: mayParse)
                (config, etag) = (cut.body, cut.etag)
            } catch .invalidScope {
                throw DeliveryErrors.invalidScope
            } catch .notCutYet {
                throw NotOnEventLoop()
            }
        } else {
            config = view.body
            etag = view.etag
        }

        var headers: HTTPFields = [.eTag: etag]
        headers[.cacheControl] = refreshAfter.map { "private, max-age=\($0)" } ?? "private, no-cache"
        if let ifNoneMatch, EntityTag.matches(ifNoneMatch: ifNoneMatch, etag) {
            return Answer(status: .notModified, headers: headers, body: ByteBuffer())
        }
        headers[.contentType] = "application/json"
        // The stored config is JSON already: wrap it without decoding and encoding it again. The
        // version and pattern are validated digits, dots and `*`.
        var body = ByteBuffer()
        body.reserveCapacity(config.count + 160)
        body.writeString(#"{"config":"#)
        body.writeBytes(config)
        body.writeString(#","matchedPattern":""#)
        body.writeString(served.pattern)
        body.writeString(#"","requestedVersion":""#)
        body.writeString(version.text)
        body.writeString(#"","revision":"#)
        body.writeString(String(served.revision))
        if let refreshAfter { body.writeString(#","refreshAfter":\#(refreshAfter)"#) }
        // The rule that chose the revision; the revision is in the ETag, so the ETag covers it.
        switch decision {
        case .published: break
        case .rollout(let rollout, let included, let mark):
            installCounts.record(appID: caller.claims.appID, rollout: rollout, included: included, mark: mark)
            body.writeString(#","rollout":{"id":""#)
            body.writeString(rollout)
            body.writeString(included ? #"","included":true}"# : #"","included":false}"#)
        case .deviceOverride:
            body.writeString(#","deviceOverride":true"#)
        }
        body.writeString(#","tier":""#)
        body.writeString(tier.rawValue)
        body.writeString(#"""#)
        if let withheld = view.withheldJSON {
            body.writeString(#","withheld":"#)
            body.writeBytes(withheld)
            DeliveryMetrics.withheld(view.withheld.count, appID: caller.claims.appID)
        }
        body.writeString("}")
        return Answer(status: .ok, headers: headers, body: body)
    }
}
