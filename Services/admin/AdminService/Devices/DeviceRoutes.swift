import Foundation
import Hummingbird
import SesameDomain
import SesameHTTP

/// `devices` (a page of attested installs), `devices/revoke`, `devices/unban`, and `attestation` (the
/// attestation ramp and how attestations went).
struct DeviceRoutes {
    let authenticator: AdminAuthenticator
    let devices: DeviceStore
    let approvals: ChangeApprovals
    let bans: DeviceBans
    let attestation: AttestationReport

    /// `devices/revoke`: the key id as listed (base64url; base64 is accepted too) and why, for the
    /// audit log and the listing; the answer.
    typealias RevokeRequest = Operations.revokeDevice.Input.Body.jsonPayload
    typealias RevokeResponse = Operations.revokeDevice.Output.Ok.Body.jsonPayload
    /// `devices/unban`: the key id of a banned device, and why the ban is lifted.
    typealias UnbanRequest = Operations.unbanDevice.Input.Body.jsonPayload
    typealias UnbanResponse = Operations.unbanDevice.Output.Ok.Body.jsonPayload

    /// A page of devices; `next` (absent on the last page) is the `after` of the next.
    typealias ListResponse = Operations.listDevices.Output.Ok.Body.jsonPayload

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.get("attestation") { request, _ -> AttestationReport.Status in
            let (appID, _) = try await authenticator.app(of: request)
            return try await attestation.status(appID: appID)
        }

        group.get("devices") { request, _ -> ListResponse in
            let (appID, _) = try await authenticator.app(of: request)
            let parameters = request.uri.queryParameters
            let limit = try parameters.get("limit").map { text -> Int in
                guard let limit = Int(text), (1...500).contains(limit) else { throw APIError.invalidField("limit", "must be from 1 to 500") }
                return limit
            } ?? 100
            let after = try parameters.get("after").map { try Self.keyID(String($0), field: "after") }
            let page = try await devices.list(appID: appID, after: after, limit: limit)
            return ListResponse(devices: page, next: page.count == limit ? page.last?.keyId : nil)
        }

        approvals.register(
            .revocation, RevokeRequest.self,
            prepare: { appID, body in
                let keyID = try Self.validRevocation(body).keyID
                // A ban that could not apply is refused when proposed, not when approved.
                if body.ban == true { _ = try await bans.target(appID: appID, keyID: keyID) }
                return ("revoke the device \(Base64.urlEncode(keyID))", try await devices.standing(appID: appID, keyID: keyID))
            },
            apply: { appID, body, caller in try await revoke(appID: appID, body, caller: caller) },
            as: "device")

        group.post("devices/revoke") { request, context -> Response in
            let (appID, caller) = try await authenticator.app(of: request)
            let body = try await request.decode(as: RevokeRequest.self, context: context)
            let keyID = try Self.validRevocation(body).keyID
            if body.ban == true { _ = try await bans.target(appID: appID, keyID: keyID) }
            return try await approvals.handle(.revocation, variant: "device", appID: appID, caller: caller, body: body, request: request, context: context)
        }

        // Lifting a ban lets a device a person judged abusive back in: guarded as revocations are.
        approvals.register(
            .revocation, UnbanRequest.self,
            prepare: { appID, body in
                let keyID = try Self.keyID(body.keyId, field: "keyId")
                _ = try Self.reason(body.reason)
                return ("lift the ban of the device \(Base64.urlEncode(keyID))", try await devices.standing(appID: appID, keyID: keyID))
            },
            apply: { appID, body, caller in
                let keyID = try Self.keyID(body.keyId, field: "keyId")
                try await bans.unban(appID: appID, keyID: keyID, reason: try Self.reason(body.reason), caller: caller)
                return UnbanResponse(
                    keyId: Base64.urlEncode(keyID),
                    message: "The device's ban is lifted: it may attest a new key (the banned key stays revoked).")
            },
            as: "unban")

        group.post("devices/unban") { request, context -> Response in
            let (appID, caller) = try await authenticator.app(of: request)
            let body = try await request.decode(as: UnbanRequest.self, context: context)
            _ = try Self.keyID(body.keyId, field: "keyId")
            _ = try Self.reason(body.reason)
            return try await approvals.handle(.revocation, variant: "unban", appID: appID, caller: caller, body: body, request: request, context: context)
        }
    }

    static func validRevocation(_ body: RevokeRequest) throws -> (keyID: [UInt8], reason: String) {
        (try Self.keyID(body.keyId, field: "keyId"), try Self.reason(body.reason))
    }

    /// Why, for the audit log: 1 to 500 characters once trimmed.
    static func reason(_ text: String) throws -> String {
        let reason = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...500).contains(reason.count) else { throw APIError.invalidField("reason", "must say why, in 1 to 500 characters") }
        return reason
    }

    func revoke(appID: String, _ body: RevokeRequest, caller: Caller) async throws -> RevokeResponse {
        let (keyID, reason) = try Self.validRevocation(body)
        if body.ban == true {
            try await bans.ban(appID: appID, keyID: keyID, reason: reason, caller: caller)
            return RevokeResponse(
                keyId: Base64.urlEncode(keyID), banned: true,
                message: "The device is revoked and banned: its tokens are refused now, and every attest from it is refused, whatever key it makes, until the ban is lifted.")
        }
        guard try await devices.revoke(appID: appID, keyID: keyID, reason: reason, actor: caller.auditName) else {
            throw AdminErrors.deviceNotFound
        }
        return RevokeResponse(
            keyId: Base64.urlEncode(keyID), banned: false,
            message: "The device is revoked: its tokens are refused now and it cannot refresh; the app must attest a new key.")
    }

    /// An App Attest key id (32 bytes) from base64url or base64.
    static func keyID(_ text: String, field: String) throws -> [UInt8] {
        guard let bytes = Base64.decode(text), bytes.count == 32 else {
            throw APIError.invalidField(field, "must be a device's key id as listed by GET /v1/admin/devices")
        }
        return bytes
    }
}

extension DeviceRoutes.RevokeResponse: ChangeAnswer {}

extension DeviceRoutes.ListResponse: ResponseEncodable {}
extension DeviceRoutes.UnbanResponse: ChangeAnswer {}
extension AttestationReport.Status: ResponseEncodable {}
