import Foundation
import HTTPTypes
import Hummingbird
import SesameDomain
import SesameHTTP
import SesameTokens

/// `GET /v1/config?version=2.1.3[&scope=a.b,c]`: the config an app at that version gets, from
/// memory, less the top-level keys the caller's trust tier may not see (named in `withheld`).
struct ConfigRoutes: Sendable {
    let gate: AccessGate

    /// Adds `GET` to the `v1/config` group.
    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.get { request, context in try await respond(to: request, context: context) }
    }

    func respond(to request: Request, context: SesameRequestContext, now: Date = Date()) async throws -> Response {
        guard let requested = request.uri.queryParameters.get("version"), let version = AppVersion(requested) else {
            throw DeliveryErrors.invalidVersion
        }
        let caller = try await gate.authenticate(request, context: context)
        let served: ServedConfig
        let refreshAfter: Int?
        switch caller.state.release.resolve(version: version, token: caller.token, now: now) {
        case .serve(let config, _, let hint): (served, refreshAfter) = (config, hint)
        case .disabled(let reason): throw DeliveryErrors.versionDisabled(reason)
        case .revoked: throw DeliveryErrors.tokenRevoked
        case .noConfig: throw DeliveryErrors.noConfig(version.text)
        }

        let tier = caller.claims.trustTier
        guard let view = served.view(for: tier) else { throw DeliveryErrors.tierInsufficient("Zero-knowledge configs are", required: .attested) }
        let config: [UInt8]
        let etag: String
        if let scope = request.uri.queryParameters.get("scope") {
            guard !served.zeroKnowledge else { throw DeliveryErrors.scopeUnavailable }
            let paths = scope.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard !paths.isEmpty, paths.count <= 100, paths.allSatisfy({ !$0.isEmpty && $0.count <= 200 }),
                let parsed = try? JSONDecoder().decode(JSONValue.self, from: Data(view.body)),
                let selected = parsed.selecting(paths: paths)
            else { throw DeliveryErrors.invalidScope }
            config = try ServedConfig.encode(selected)
            etag = ServedConfig.etag(revision: served.revision, bytes: config)
        } else {
            config = view.body
            etag = view.etag
        }

        var headers: HTTPFields = [.eTag: etag]
        headers[.cacheControl] = refreshAfter.map { "private, max-age=\($0)" } ?? "private, no-cache"
        if let ifNoneMatch = request.headers[.ifNoneMatch], EntityTag.matches(ifNoneMatch: ifNoneMatch, etag) {
            return Response(status: .notModified, headers: headers)
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
        body.writeString(#","tier":""#)
        body.writeString(tier.rawValue)
        body.writeString(#"""#)
        if let withheld = view.withheldJSON {
            body.writeString(#","withheld":"#)
            body.writeBytes(withheld)
            DeliveryMetrics.withheld(view.withheld.count, appID: caller.claims.appID)
        }
        body.writeString("}")
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: body))
    }
}
