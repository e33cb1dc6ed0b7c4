import Foundation
import Hummingbird
import SesameConfiguration
import SesameDomain
import SesameHTTP
import SesameOutbound

/// `relays`: an app's attested relays (issue 60), set by name (`PUT relays/{name}`: made, or changed
/// with its injected headers kept unless given), listed without the headers' values, removed. Setting
/// and removing are under the two-person rule when the app's policy guards `relay`; a proposal's
/// reader sees the header names, never their values.
struct RelayRoutes {
    let authenticator: AdminAuthenticator
    let relays: RelayStore
    let outbound: OutboundAddressPolicy
    let approvals: ChangeApprovals

    typealias SetRequest = Components.Schemas.RelayRequest
    typealias SetResponse = Operations.setRelay.Output.Ok.Body.jsonPayload
    typealias ListResponse = Operations.listRelays.Output.Ok.Body.jsonPayload
    typealias RemoveResponse = Operations.removeRelay.Output.Ok.Body.jsonPayload

    /// A relay set, as a proposal stores it: the name from the path, the request's body.
    struct RelayChange: Codable, Sendable {
        let name: String
        let relay: SetRequest
    }

    /// A relay removed, as a proposal stores it.
    struct RelayRemoval: Codable, Sendable {
        let name: String
    }

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        approvals.register(
            .relay, RelayChange.self,
            prepare: { appID, change in
                let rules = try checked(change.relay, appID: appID)
                return (try await summary(appID: appID, change, rules: rules), try await relays.base(appID: appID, name: change.name))
            },
            apply: { appID, change, caller in try await set(appID: appID, change, caller: caller) },
            shown: { change in
                var relay = change.relay
                relay.headers = relay.headers.map { .init(additionalProperties: $0.additionalProperties.mapValues { _ in "(withheld)" }) }
                return RelayChange(name: change.name, relay: relay)
            })
        approvals.register(
            .relay, RelayRemoval.self,
            prepare: { appID, removal in ("remove relay \(removal.name)", try await relays.base(appID: appID, name: removal.name)) },
            apply: { appID, removal, caller in
                guard try await relays.remove(appID: appID, name: removal.name, caller: caller) else { throw RelayErrors.notFound }
                return RemoveResponse(message: "Removed; its calls are refused from now on.")
            },
            as: "remove")

        group.put("relays/:name") { request, context -> Response in
            let (appID, caller) = try await authenticator.app(of: request)
            let change = RelayChange(name: try Self.name(context), relay: try await request.decode(as: SetRequest.self, context: context))
            _ = try checked(change.relay, appID: appID)
            return try await approvals.handle(.relay, appID: appID, caller: caller, body: change, request: request, context: context)
        }

        group.get("relays") { request, _ -> ListResponse in
            let (appID, _) = try await authenticator.app(of: request)
            return ListResponse(relays: try await relays.list(appID: appID))
        }

        group.delete("relays/:name") { request, context -> Response in
            let (appID, caller) = try await authenticator.app(of: request)
            let removal = RelayRemoval(name: try Self.name(context))
            return try await approvals.handle(.relay, variant: "remove", appID: appID, caller: caller, body: removal, request: request, context: context)
        }
    }

    /// What a proposal of `change` says it does; plainly where the sealed headers kept go to another
    /// upstream than before. Refuses a move to another origin that keeps the headers (as setting it would).
    func summary(appID: String, _ change: RelayChange, rules: RelayRules) async throws -> String {
        if let given = change.relay.headers {
            return "set relay \(change.name) to \(rules.upstream) (injects \(given.additionalProperties.keys.sorted().joined(separator: ", ")))"
        }
        let current = try await relays.current(appID: appID, name: change.name)
        if let refusal = RelayStore.keptHeadersRefusal(current, movingTo: rules.origin) { throw refusal }
        guard let current, current.upstream != rules.upstream else { return "set relay \(change.name) to \(rules.upstream) (keeps its headers)" }
        return "set relay \(change.name) to \(rules.upstream): SENDS ITS EXISTING SEALED HEADERS (\(current.headerNames.joined(separator: ", "))) "
            + "TO THIS NEW UPSTREAM, not \(current.upstream) any more"
    }

    /// Makes or changes the relay as `change` says.
    func set(appID: String, _ change: RelayChange, caller: Caller) async throws -> SetResponse {
        let rules = try checked(change.relay, appID: appID)
        let made = try await relays.set(appID: appID, name: change.name, rules: rules, headers: change.relay.headers?.additionalProperties, caller: caller)
        guard let listing = try await relays.list(appID: appID, name: change.name).first else { throw RelayErrors.notFound }
        return SetResponse(relay: listing, message: made ? "The relay \(change.name) is made." : "The relay \(change.name) is changed.")
    }

    /// The request's rules and headers, validated.
    func checked(_ body: SetRequest, appID: String) throws -> RelayRules {
        let rules = try rules(body, appID: appID)
        if let headers = body.headers?.additionalProperties {
            do throws(RelayRules.Invalid) { try RelayHeaders.validate(headers) } catch { throw APIError.invalidField(error.field, error.reason) }
        }
        return rules
    }

    static func name(_ context: SesameRequestContext) throws -> String {
        guard let name = context.parameters.get("name"), RelayRules.isValidName(name) else {
            throw APIError.invalidField("name", "must be 1 to 64 of a-z, 0-9 and -, not starting with -")
        }
        return name
    }

    /// The request's rules, validated; the upstream an https origin (with a base path at most) that
    /// the outbound address policy allows to `appID`'s relays.
    func rules(_ body: SetRequest, appID: String) throws -> RelayRules {
        var upstream = body.upstream
        while upstream.hasSuffix("/") { upstream.removeLast() }
        guard upstream.utf8.count <= 2048, let components = URLComponents(string: upstream), components.user == nil, components.password == nil,
            components.query == nil, components.fragment == nil
        else { throw APIError.invalidField("upstream", "must be an https origin with a base path at most: no user, query or fragment") }
        if let refusal = outbound.refusal(of: upstream, for: OutboundUse(.relay, appID: appID)) { throw APIError.invalidField("upstream", refusal) }
        let rules = RelayRules(
            upstream: upstream, methods: body.methods.map(\.rawValue), paths: body.paths, leastTier: body.leastTier.flatMap { TrustTier(rawValue: $0.rawValue) } ?? .attested,
            proof: body.proof.flatMap { RelayProof(rawValue: $0.rawValue) } ?? .none, maxRequestBytes: body.maxRequestBytes ?? 1 << 20,
            maxResponseBytes: body.maxResponseBytes ?? 10 << 20, timeoutSeconds: body.timeoutSeconds ?? 60,
            perInstallPerMinute: body.perInstallPerMinute, perInstallPerDay: body.perInstallPerDay, perAppPerDay: body.perAppPerDay)
        do throws(RelayRules.Invalid) { try rules.validate() } catch { throw APIError.invalidField(error.field, error.reason) }
        return rules
    }
}

extension RelayRoutes.SetResponse: ChangeAnswer {}
extension RelayRoutes.ListResponse: ResponseEncodable {}
extension RelayRoutes.RemoveResponse: ChangeAnswer {}
