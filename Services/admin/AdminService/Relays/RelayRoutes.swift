import Foundation
import Hummingbird
import SesameDomain
import SesameHTTP
import SesameOutbound

/// `relays`: an app's attested relays (issue 60), set by name (`PUT relays/{name}`: made, or changed
/// with its injected headers kept unless given), listed without the headers' values, removed.
struct RelayRoutes {
    let authenticator: AdminAuthenticator
    let relays: RelayStore
    let outbound: OutboundAddressPolicy

    typealias SetRequest = Components.Schemas.RelayRequest
    typealias SetResponse = Operations.setRelay.Output.Ok.Body.jsonPayload
    typealias ListResponse = Operations.listRelays.Output.Ok.Body.jsonPayload
    typealias RemoveResponse = Operations.removeRelay.Output.Ok.Body.jsonPayload

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.put("relays/:name") { request, context -> SetResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            let name = try Self.name(context)
            let body = try await request.decode(as: SetRequest.self, context: context)
            let rules = try rules(body)
            if let headers = body.headers?.additionalProperties {
                do throws(RelayRules.Invalid) { try RelayHeaders.validate(headers) } catch { throw APIError.invalidField(error.field, error.reason) }
            }
            let made = try await relays.set(appID: appID, name: name, rules: rules, headers: body.headers?.additionalProperties, caller: caller)
            guard let listing = try await relays.list(appID: appID, name: name).first else { throw RelayErrors.notFound }
            return SetResponse(relay: listing, message: made ? "The relay \(name) is made." : "The relay \(name) is changed.")
        }

        group.get("relays") { request, _ -> ListResponse in
            let (appID, _) = try await authenticator.app(of: request)
            return ListResponse(relays: try await relays.list(appID: appID))
        }

        group.delete("relays/:name") { request, context -> RemoveResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            guard try await relays.remove(appID: appID, name: try Self.name(context), caller: caller) else { throw RelayErrors.notFound }
            return RemoveResponse(message: "Removed; its calls are refused from now on.")
        }
    }

    static func name(_ context: SesameRequestContext) throws -> String {
        guard let name = context.parameters.get("name"), RelayRules.isValidName(name) else {
            throw APIError.invalidField("name", "must be 1 to 64 of a-z, 0-9 and -, not starting with -")
        }
        return name
    }

    /// The request's rules, validated; the upstream an https origin (with a base path at most) that
    /// the outbound address policy allows.
    func rules(_ body: SetRequest) throws -> RelayRules {
        var upstream = body.upstream
        while upstream.hasSuffix("/") { upstream.removeLast() }
        guard upstream.utf8.count <= 2048, let components = URLComponents(string: upstream), components.user == nil, components.password == nil,
            components.query == nil, components.fragment == nil
        else { throw APIError.invalidField("upstream", "must be an https origin with a base path at most: no user, query or fragment") }
        if let refusal = outbound.refusal(of: upstream) { throw APIError.invalidField("upstream", refusal) }
        let rules = RelayRules(
            upstream: upstream, methods: body.methods.map(\.rawValue), paths: body.paths, leastTier: body.leastTier.flatMap { TrustTier(rawValue: $0.rawValue) } ?? .attested,
            proof: body.proof.flatMap { RelayProof(rawValue: $0.rawValue) } ?? .none, maxRequestBytes: body.maxRequestBytes ?? 1 << 20,
            maxResponseBytes: body.maxResponseBytes ?? 10 << 20, timeoutSeconds: body.timeoutSeconds ?? 60,
            perInstallPerMinute: body.perInstallPerMinute, perInstallPerDay: body.perInstallPerDay, perAppPerDay: body.perAppPerDay)
        do throws(RelayRules.Invalid) { try rules.validate() } catch { throw APIError.invalidField(error.field, error.reason) }
        return rules
    }
}

extension RelayRoutes.SetResponse: ResponseEncodable {}
extension RelayRoutes.ListResponse: ResponseEncodable {}
extension RelayRoutes.RemoveResponse: ResponseEncodable {}
