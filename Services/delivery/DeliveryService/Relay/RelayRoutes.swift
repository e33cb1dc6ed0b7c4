import AsyncHTTPClient
import Foundation
import HTTPTypes
import JWTKit
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import SesameDomain
import SesameHTTP
import SesameRelayProof
import SesameOutbound
import ServiceLifecycle
import SesameConfiguration
import SesameStorage
import SesameTokens

/// `/v1/relay/{name}/{path…}`: an attested relay's data plane (`docs/relay.md`). The caller passes
/// the config fetch's gate (rate limits, token, standing, tier, kill switches, revocations), then
/// the relay's methods, paths, quotas and open-call limits; the call goes to the relay's upstream
/// through a pinned client (`PinnedClientPool`), with the caller's credentials and hop-by-hop
/// headers dropped and the relay's headers injected; the answer streams back as it arrives. A
/// stream stops when its call's time is up, or, checked each second, when the caller's standing or
/// the relay changes (an event stream is told why first).
struct RelayRoutes: Sendable {
    let gate: AccessGate
    let upstreams: PinnedClientPool
    let quotas: RelayQuotas
    let slots: RelayCallSlots
    let proofs: RelayProofCheck
    let logger: Logger

    static let methods: [HTTPRequest.Method] = [.get, .post, .put, .patch, .delete]
    static let maxQueryBytes = 4096
    /// The largest request body a relay may take (`RelayRules.requestBytesRange`): the group's limit.
    static let maxBodyBytes = RelayRules.requestBytesRange.upperBound
    /// How a refusal for the caller's tier names a relay.
    static let tierRefusalSubject = "This relay is, by its rules,"
    /// How often an open stream checks that its caller and its relay still stand.
    static let standingInterval: Duration = .seconds(1)

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        for method in Self.methods {
            group.on("{name}/**", method: method) { request, context in try await relay(request, context: context) }
        }
    }

    func relay(_ request: Request, context: SesameRequestContext) async throws -> Response {
        let started = ContinuousClock.now
        let caller = try await gate.authenticate(request, context: context)
        let appID = caller.claims.appID
        guard let name = context.parameters.get("name") else { throw RelayErrors.notFound }
        guard let relay = caller.state.relays[name] else {
            throw caller.state.unusableRelays[name] == nil ? RelayErrors.notFound : RelayErrors.unusable
        }
        do {
            return try await forward(request, context: context, caller: caller, relay: relay, started: started)
        } catch let error as APIError {
            RelayMetrics.request(appID: appID, relay: relay.name, outcome: error.code)
            throw error
        }
    }

    private func forward(
        _ request: Request, context: SesameRequestContext, caller: AccessGate.Authenticated, relay: ServedRelay, started: ContinuousClock.Instant
    ) async throws -> Response {
        let appID = caller.claims.appID
        let rules = relay.rules
        _ = try gate.admit(caller, tier: rules.leastTier, what: Self.tierRefusalSubject)
        guard rules.methods.contains(request.method.rawValue) else { throw RelayErrors.methodNotAllowed(rules.methods) }
        let prefix = "/v1/relay/\(relay.name)"
        let fullPath = request.uri.path
        guard fullPath.hasPrefix(prefix) else { throw RelayErrors.pathNotAllowed }
        let path = String(fullPath.dropFirst(prefix.count))
        guard relay.allows(path: path) else { throw RelayErrors.pathNotAllowed }
        let query = request.uri.query
        guard (query?.utf8.count ?? 0) <= Self.maxQueryBytes else { throw RelayErrors.queryTooLong }
        if let length = request.headers[.contentLength].flatMap(Int.init), length > rules.maxRequestBytes {
            throw RelayErrors.requestTooLarge(rules.maxRequestBytes)
        }

        let subject = caller.claims.subject.value
        let address = gate.clients.limitKey(of: request, context: context)
        // An unattested install is a new subject at each exchange: its per-install quotas count its address.
        let quotaSubject = caller.claims.trustTier == .unattested ? "address:" + address : subject
        // The slot first: it bounds the bodies held at once.
        let counted = RelayCallSlots.Caller(subject: subject, appID: appID, address: address)
        guard let slot = slots.take(for: counted) else { throw RelayErrors.busy }
        // The whole call, the body's arrival included, within the relay's time: a body sent a byte at
        // a time does not hold its slot past it.
        let deadline = started + .seconds(rules.timeoutSeconds)
        let body: ByteBuffer
        do {
            let (requestBody, limit) = (request.body, rules.maxRequestBytes)
            body = try await withTimeout(deadline - ContinuousClock.now) { try await requestBody.collect(upTo: limit) }
        } catch is NIOTooManyBytesError {
            throw RelayErrors.requestTooLarge(rules.maxRequestBytes)
        } catch is TimeoutError {
            throw RelayErrors.requestTimeout(rules.timeoutSeconds)
        }
        // A proof spent, then the quota: a refused proof costs no quota.
        let call = RelayCallStatement(method: request.method.rawValue, relay: relay.name, path: path, query: query, body: body.readableBytesView)
        try await proofs.check(rules.proof, call: call, request: request, caller: caller.claims)
        do {
            try await quotas.spend(appID: appID, relay: relay.name, subject: quotaSubject, rules: rules)
        } catch {
            switch error {
            case .exceeded(let kind, let limit, let retryAfter):
                RelayMetrics.quotaRefused(appID: appID, relay: relay.name, quota: kind.rawValue)
                throw RelayErrors.quotaExceeded(kind, limit: limit, retryAfter: retryAfter)
            case .full: throw RelayErrors.busy
            }
        }
        RelayMetrics.bytes(body.readableBytes, appID: appID, relay: relay.name, up: true)

        var outbound = HTTPClientRequest(url: relay.upstreamURL(path: path, query: query))
        outbound.method = HTTPMethod(rawValue: request.method.rawValue)
        let callerHeaders = request.headers.map { (name: $0.name.canonicalName, value: $0.value) }
        for header in RelayHeaders.forwarded(from: callerHeaders, injected: relay.injected) {
            outbound.headers.add(name: header.name, value: header.value)
        }
        if body.readableBytes > 0 || request.method != .get { outbound.body = .bytes(body) }

        let answer: HTTPClientResponse
        do {
            let client = try await upstreams.client(scheme: relay.scheme, host: relay.host, port: relay.port, for: OutboundUse(.relay, appID: appID))
            let remaining = deadline - ContinuousClock.now
            answer = try await client.execute(outbound, deadline: .now() + .nanoseconds(remaining.inNanoseconds), logger: logger)
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            throw RelayErrors.upstreamTimeout(rules.timeoutSeconds)
        } catch {
            logger.warning(
                "relay upstream failed",
                metadata: ["relay": "\(relay.name)", "app": "\(appID)", "upstream.host": "\(relay.host)", "error": "\(String(reflecting: error))"])
            throw RelayErrors.upstreamFailed
        }
        RelayMetrics.upstreamLatency(ContinuousClock.now - started, appID: appID, relay: relay.name)
        if let length = answer.headers.first(name: "content-length").flatMap(Int.init), length > rules.maxResponseBytes {
            throw RelayErrors.responseTooLarge(rules.maxResponseBytes)
        }
        RelayMetrics.request(appID: appID, relay: relay.name, outcome: "\(answer.status.code / 100)xx")

        var headers = HTTPFields()
        for header in RelayHeaders.returned(from: answer.headers.map { (name: $0.name, value: $0.value) }) {
            if let name = HTTPField.Name(header.name) { headers.append(HTTPField(name: name, value: header.value)) }
        }
        let isEventStream = answer.headers.first(name: "content-type")?.lowercased().hasPrefix("text/event-stream") ?? false
        let stream = RelayStream(
            answer: answer, claims: caller.claims, relay: relay, gate: gate, deadline: deadline, isEventStream: isEventStream, slot: slot,
            connection: context.connection)
        return Response(
            status: HTTPResponse.Status(code: Int(answer.status.code)), headers: headers,
            body: ResponseBody { writer in try await stream.write(to: &writer) })
    }
}

/// Keeps the relay's upstream clients for the service's life and shuts them at its end.
struct RelayUpstreamsService: Service {
    let pool: PinnedClientPool

    func run() async throws {
        try? await gracefulShutdown()
        await pool.shutdown()
    }
}
