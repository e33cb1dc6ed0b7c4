import Foundation
import NIOCore
import SesameOutbound

/// Apple's DeviceCheck server (`api.devicecheck.apple.com`, or `api.development.devicecheck.apple.com`
/// for development builds), reached only through the guarded outbound client, at the address the
/// operator configured (`SESAME_APPLE_DEVICECHECK_URL`).
public struct DeviceCheckClient: Sendable {
    /// A device token no device makes: a call with it reaches Apple's token check only once the JWT passed.
    static let probeDeviceToken = Data("sesame: a credential check, not a device".utf8).base64EncodedString()

    public let baseURL: String
    let outbound: OutboundHTTPClient

    public init(baseURL: String, outbound: OutboundHTTPClient) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.outbound = outbound
    }

    /// What Apple made of a key.
    public enum CredentialCheck: Equatable, Sendable {
        /// Apple verified the JWT (it then refused the probe's device token, as it must).
        case accepted
        /// Apple refused the JWT: the key id, the team id or the key is wrong, or the key lacks DeviceCheck.
        case refused
        /// Apple asked to slow down; nothing was learned.
        case rateLimited
        /// Apple could not be asked or answered something else; why.
        case unreachable(String)

        /// As stored and shown: `accepted`, `refused`, `rate_limited`, `unreachable`.
        public var outcome: String {
            switch self {
            case .accepted: "accepted"
            case .refused: "refused"
            case .rateLimited: "rate_limited"
            case .unreachable: "unreachable"
            }
        }

        /// What it means for the person who set the key.
        public var message: String {
            switch self {
            case .accepted: "Apple accepted the key."
            case .refused:
                "Apple refused the key (401): check the key id, that the key belongs to this app's team, and that DeviceCheck is enabled for it in the developer account."
            case .rateLimited: "Apple asked Sesame to slow down (429); check again later."
            case .unreachable(let reason): "Apple could not be asked: \(reason)."
            }
        }
    }

    /// Asks Apple's `query_two_bits` with a JWT signed by `key` and a device token no device makes:
    /// Apple checks the JWT before the token, so 400 (bad device token) means the key is good and
    /// 401 that it is not. Never throws: what went wrong is the answer.
    public func check(_ key: DeviceCheckKey) async -> CredentialCheck {
        let token: String
        do {
            token = try await key.developerToken()
        } catch {
            return .unreachable("the JWT could not be signed (\(error))")
        }
        let body = #"{"device_token":"\#(Self.probeDeviceToken)","transaction_id":"\#(UUID().uuidString.lowercased())","timestamp":\#(Int64(Date().timeIntervalSince1970 * 1000))}"#
        do {
            _ = try await outbound.post(
                "\(baseURL)/v1/query_two_bits", headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                body: ByteBuffer(string: body))
            // A 2xx for a token no device made: the JWT passed all the same.
            return .accepted
        } catch OutboundHTTPClient.Refusal.status(let status) {
            switch status {
            case 400: return .accepted
            case 401, 403: return .refused
            case 429: return .rateLimited
            default: return .unreachable("it answered \(status)")
            }
        } catch {
            return .unreachable("\(error)")
        }
    }
}
