import CryptoExtras
import Foundation
import Hummingbird
import SesameDomain
import SesameHTTP
import SesamePinning

/// `pins` (add, list, remove), `pins/signing-key`, `pins/prepare-signing-key` and
/// `pins/rotate-signing-key`: the app's SPKI pin registry, which delivery signs and serves at
/// `/v1/pins/{teamId}.{bundleId}.json`. Adding and removing a pin are under the two-person rule when
/// the policy guards `pins` (a wrong pin cuts every install off the API it pins).
struct PinRoutes {
    let authenticator: AdminAuthenticator
    let pins: PinStore
    let approvals: ChangeApprovals

    typealias AddRequest = Operations.addPin.Input.Body.jsonPayload
    typealias ListResponse = Operations.listPins.Output.Ok.Body.jsonPayload
    typealias SigningKeyResponse = Components.Schemas.PinSigningKey
    typealias SigningKeysResponse = Operations.getPinSigningKey.Output.Ok.Body.jsonPayload
    typealias RotateRequest = Operations.preparePinSigningKey.Input.Body.jsonPayload

    struct Done: ChangeAnswer {
        let message: String
    }

    /// A pin to remove, as a proposal stores it (the route takes it from the query).
    struct Removal: Codable, Sendable {
        let domainName: String
        let key: String
    }

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        approvals.register(
            .pins, AddRequest.self,
            prepare: { _, body in
                let pin = try Self.validPin(body)
                return ("pin \(pin.domain) to \(pin.key)\(pin.fqdn.map { " (\($0))" } ?? "")", nil)
            },
            apply: { appID, body, caller in
                let pin = try Self.validPin(body)
                try await pins.add(appID: appID, domainName: pin.domain, key: pin.key, fqdn: pin.fqdn, expire: body.expire, caller: caller)
                return Done(message: "Pinned \(pin.domain) to \(pin.key); apps see it at their next registry fetch.")
            })
        approvals.register(
            .pins, Removal.self,
            prepare: { _, removal in ("remove the pin of \(removal.domainName) to \(removal.key)", nil) },
            apply: { appID, removal, caller in
                guard try await pins.remove(appID: appID, domainName: removal.domainName, key: removal.key, caller: caller) else {
                    throw APIError(.notFound, code: AdminErrorCode.pinNotFound, message: "No pin of this app has that domain name and key.")
                }
                return Done(message: "Removed the pin of \(removal.domainName).")
            },
            as: "remove")

        group.post("pins") { request, context -> Response in
            let (appID, caller) = try await authenticator.app(of: request)
            let body = try await request.decode(as: AddRequest.self, context: context)
            _ = try Self.validPin(body)
            return try await approvals.handle(.pins, appID: appID, caller: caller, body: body, request: request, context: context)
        }

        group.get("pins") { request, _ -> ListResponse in
            let (appID, _) = try await authenticator.app(of: request)
            return ListResponse(pins: try await pins.list(appID: appID))
        }

        group.delete("pins") { request, context -> Response in
            let (appID, caller) = try await authenticator.app(of: request)
            let parameters = request.uri.queryParameters
            guard let domain = parameters.get("domainName"), let key = parameters.get("key") else {
                throw APIError.invalidField("domainName", "and \"key\" name the pin to remove")
            }
            let removal = Removal(domainName: String(domain).lowercased(), key: String(key))
            return try await approvals.handle(.pins, variant: "remove", appID: appID, caller: caller, body: removal, request: request, context: context)
        }

        group.get("pins/signing-key") { request, _ -> SigningKeysResponse in
            let (appID, _) = try await authenticator.app(of: request)
            let active = try await pins.publicKey(appID: appID, state: .active)
            let next = try await pins.publicKey(appID: appID, state: .pending)
            guard active != nil || next != nil else {
                throw APIError(
                    .notFound, code: AdminErrorCode.noSigningKey,
                    message: "This app has no registry signing key yet: add a pin, or create one with POST /v1/admin/pins/rotate-signing-key.")
            }
            return SigningKeysResponse(active: active.map(Self.describe), next: next.map(Self.describe))
        }

        group.post("pins/prepare-signing-key") { request, context -> SigningKeyResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            return Self.describe(try await pins.prepare(appID: appID, bits: try await Self.bits(request, context: context), caller: caller))
        }

        group.post("pins/rotate-signing-key") { request, context -> SigningKeyResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            try await pins.rotate(appID: appID, bits: try await Self.bits(request, context: context), caller: caller)
            guard let active = try await pins.publicKey(appID: appID, state: .active) else { throw APIError.invalidRequest("The new key was not stored.") }
            return Self.describe(active)
        }
    }

    static func bits(_ request: Request, context: SesameRequestContext) async throws -> Int {
        let bits = try await request.decode(as: RotateRequest.self, context: context).bits ?? 2048
        guard PinSigningKeys.allowedBits.contains(bits) else { throw APIError.invalidField("bits", "must be 2048 or 4096") }
        return bits
    }

    static func describe(_ key: PinStore.SigningKey) -> SigningKeyResponse {
        SigningKeyResponse(keyId: key.keyID.uuidString.lowercased(), createdAt: key.createdAt, pem: key.key.pemRepresentation, base64: PinSigningKeys.singleLineBase64(key.key))
    }

    /// A host name, or `*.` and a host name of at least two labels (never a wildcard over a TLD).
    /// The pin `body` asks for, checked: its domain, its key as base64 of 32 bytes, its host.
    static func validPin(_ body: AddRequest) throws -> (domain: String, key: String, fqdn: String?) {
        let domain = try validDomain(body.domainName)
        guard let digest = Data(base64Encoded: body.key), digest.count == 32 else {
            throw APIError.invalidField("key", "must be base64 of the 32-byte SHA-256 of the certificate's SubjectPublicKeyInfo")
        }
        let fqdn = try body.fqdn.map { try validHost($0, field: "fqdn") }
        if let expire = body.expire, expire <= Int64(Date().timeIntervalSince1970) {
            throw APIError.invalidField("expire", "must be a Unix time in the future (seconds)")
        }
        return (domain, digest.base64EncodedString(), fqdn)
    }

    static func validDomain(_ text: String) throws -> String {
        let domain = text.lowercased()
        if domain.hasPrefix("*.") {
            let parent = try validHost(String(domain.dropFirst(2)), field: "domainName")
            guard parent.contains(".") else { throw APIError.invalidField("domainName", "may not put a wildcard over a top-level domain") }
            return "*." + parent
        }
        return try validHost(domain, field: "domainName")
    }

    static func validHost(_ text: String, field: String) throws -> String {
        let host = text.lowercased()
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        guard host.utf8.count <= 253, !labels.isEmpty,
            labels.allSatisfy({ label in
                (1...63).contains(label.count) && label.first != "-" && label.last != "-"
                    && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
            })
        else { throw APIError.invalidField(field, "must be a host name such as api.example.com (or *.example.com for domainName)") }
        return host
    }
}

extension PinRoutes.ListResponse: ResponseEncodable {}
extension PinRoutes.SigningKeyResponse: ResponseEncodable {}
extension PinRoutes.SigningKeysResponse: ResponseEncodable {}
