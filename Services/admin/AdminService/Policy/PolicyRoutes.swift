import Foundation
import Hummingbird
import SesameConfiguration
import SesameDomain
import SesameHTTP
import SesameOutbound
import SesameTokens

/// `GET` and `PUT /v1/admin/policy`: the app's security policy (development keys, assertions on
/// refresh, how per-user data knows its user, the user document quota).
struct PolicyRoutes {
    let authenticator: AdminAuthenticator
    let policies: PolicyStore
    let approvals: ChangeApprovals
    /// Which outbound addresses (the identity issuer's JWKS URL) may be configured.
    let outbound: OutboundAddressPolicy

    struct PolicyDocument: ResponseEncodable {
        let policy: AppPolicy
    }

    struct PolicyResponse: ChangeAnswer {
        let message: String
        let policy: AppPolicy
        let changed: [String]
    }

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.get("policy") { request, _ -> PolicyDocument in
            let (appID, _) = try await authenticator.app(of: request)
            return PolicyDocument(policy: try await policies.policy(appID: appID))
        }

        approvals.register(
            .policy, AppPolicy.self,
            prepare: { appID, policy in
                try await Self.validate(policy, appID: appID, outbound: outbound)
                try await policies.checkBanBit(policy.deviceBanBit, appID: appID)
                let current = try await policies.policy(appID: appID)
                let changed = PolicyStore.changedFields(current, policy)
                // Sorted keys: the same policy is the same base, whichever order its fields were encoded in.
                let encoder = JSONEncoder()
                encoder.outputFormatting = .sortedKeys
                let base = String(decoding: try encoder.encode(current), as: UTF8.self)
                return ("change the policy: \(changed.isEmpty ? "nothing" : changed.joined(separator: ", "))", base)
            },
            apply: { appID, policy, caller in
                try await Self.validate(policy, appID: appID, outbound: outbound)
                try await policies.checkBanBit(policy.deviceBanBit, appID: appID)
                let changed = try await policies.replace(appID: appID, with: policy, caller: caller)
                return PolicyResponse(
                    message: changed.isEmpty ? "The policy is unchanged." : "Policy updated: \(changed.joined(separator: ", ")).", policy: policy,
                    changed: changed)
            })

        group.put("policy") { request, context -> Response in
            let (appID, caller) = try await authenticator.app(of: request)
            let policy = try await request.decode(as: AppPolicy.self, context: context)
            try await Self.validate(policy, appID: appID, outbound: outbound)
            try await policies.checkBanBit(policy.deviceBanBit, appID: appID)
            return try await approvals.handle(.policy, appID: appID, caller: caller, body: policy, request: request, context: context)
        }
    }

    /// Refuses a policy Sesame could not enforce, naming the field.
    static func validate(_ policy: AppPolicy, appID: String, outbound: OutboundAddressPolicy) async throws {
        guard (1...10_000_000).contains(policy.userDocumentQuota) else {
            throw APIError.invalidField("userDocumentQuota", "must be from 1 to 10000000")
        }
        guard policy.apiAudiences.count <= 10, Set(policy.apiAudiences).count == policy.apiAudiences.count,
              policy.apiAudiences.allSatisfy(APIAudience.isValid)
        else {
            throw APIError.invalidField("apiAudiences", "must list at most 10 distinct audiences of 1 to 256 printable characters, no spaces, none of Sesame's own (sesame-api, sesame-refresh)")
        }
        guard Set(policy.requireApproval).count == policy.requireApproval.count else {
            throw APIError.invalidField("requireApproval", "must list each kind of change once")
        }
        if let maxRisk = policy.maxRiskMetric, !(1...10_000).contains(maxRisk) {
            throw APIError.invalidField("maxRiskMetric", "must be from 1 to 10000 (Apple's count of keys a device made for the app), or null for no limit")
        }
        if let ramp = policy.attestationRamp {
            guard ramp.isFinite, (0...100).contains(ramp) else {
                throw APIError.invalidField("attestationRamp", "must be a percentage from 0 to 100, or null for every install")
            }
            guard ramp == 100 || policy.admitUnattested else {
                throw APIError.invalidField(
                    "attestationRamp", "below 100 needs admitUnattested: the installs outside the ramp use the unattested tier")
            }
        }
        if policy.attestationRampAutomatic {
            // Doubling starts from somewhere and has somewhere to go.
            guard let ramp = policy.attestationRamp, ramp > 0, ramp < 100 else {
                throw APIError.invalidField(
                    "attestationRampAutomatic", "needs an attestationRamp above 0 and below 100 to start from")
            }
        }
        guard let issuer = policy.identityIssuer else { return }
        guard !issuer.issuer.isEmpty, issuer.issuer.utf8.count <= 512 else {
            throw APIError.invalidField("identityIssuer.issuer", "must be the exact iss of the issuer's tokens (at most 512 characters)")
        }
        guard (1...20).contains(issuer.audiences.count), issuer.audiences.allSatisfy({ (1...256).contains($0.utf8.count) }) else {
            throw APIError.invalidField("identityIssuer.audiences", "must list 1 to 20 accepted aud values")
        }
        switch (issuer.jwksURL, issuer.publicKeysPEM) {
        case (let url?, nil):
            // What the URL resolves to is checked again at every fetch (a name can change its answer).
            if let refusal = outbound.refusal(of: url, for: OutboundUse(.jwks, appID: appID)) { throw APIError.invalidField("identityIssuer.jwksURL", refusal) }
        case (nil, let pem?):
            do {
                _ = try await IdentityIssuerKeys(pem: pem)
            } catch {
                throw APIError.invalidField("identityIssuer.publicKeysPEM", "is not usable: \(error)")
            }
        default:
            throw APIError.invalidField("identityIssuer", "needs exactly one of jwksURL and publicKeysPEM")
        }
    }
}
