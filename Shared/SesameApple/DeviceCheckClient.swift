import Foundation
import NIOCore
import SesameConfiguration
import SesameOutbound

/// Apple's DeviceCheck server (`api.devicecheck.apple.com`, and `api.development.devicecheck.apple.com`
/// for development builds' device tokens), reached only through the guarded outbound client, at the
/// addresses the operator configured (`SESAME_APPLE_DEVICECHECK_URL`, `…_DEVELOPMENT_URL`).
public struct DeviceCheckClient: Sendable {
    /// A device token no device makes: a call with it reaches Apple's token check only once the JWT passed.
    static let probeDeviceToken = Data("sesame: a credential check, not a device".utf8).base64EncodedString()
    /// The most of Apple's answer read: its bits are a few dozen bytes of JSON.
    static let maximumAnswerBytes = 4096

    public let baseURL: String
    public let developmentURL: String
    let outbound: OutboundHTTPClient

    public init(baseURL: String, developmentURL: String, outbound: OutboundHTTPClient) {
        self.baseURL = baseURL.withoutTrailingSlash
        self.developmentURL = developmentURL.withoutTrailingSlash
        self.outbound = outbound
    }

    /// Apple's servers as the operator configured them, through the guarded outbound client.
    public init(configuration: ServiceConfiguration) {
        self.init(
            baseURL: configuration.appleDeviceCheckURL, developmentURL: configuration.appleDeviceCheckDevelopmentURL,
            outbound: OutboundHTTPClient(
                policy: .operatorURLs([configuration.appleDeviceCheckURL, configuration.appleDeviceCheckDevelopmentURL], configuration: configuration)))
    }

    /// Why Apple did not answer a device's bits.
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// Apple refused the device token (400): not a token a device of this team made.
        case invalidDeviceToken
        /// Apple refused the JWT (401, 403): the key is wrong or lacks DeviceCheck.
        case keyRefused
        /// Apple asked to slow down (429).
        case rateLimited
        /// Apple could not be asked or answered something else; why.
        case unreachable(String)

        public var description: String {
            switch self {
            case .invalidDeviceToken: "Apple refused the device token"
            case .keyRefused: "Apple refused the app's DeviceCheck key"
            case .rateLimited: "Apple asked Sesame to slow down"
            case .unreachable(let reason): "Apple could not be asked: \(reason)"
            }
        }
    }

    /// A device's two bits as Apple keeps them for the team (both false until first set).
    public struct DeviceBits: Equatable, Sendable {
        public var bit0: Bool
        public var bit1: Bool

        public init(bit0: Bool, bit1: Bool) {
            self.bit0 = bit0
            self.bit1 = bit1
        }

        /// Bit 0 or bit 1.
        public subscript(bit: Int) -> Bool { bit == 0 ? bit0 : bit1 }
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
        do {
            _ = try await send("query_two_bits", fields: "", deviceToken: Self.probeDeviceToken, key: key, development: false)
            // A 2xx for a token no device made: the JWT passed all the same.
            return .accepted
        } catch .invalidDeviceToken {
            return .accepted
        } catch .keyRefused {
            return .refused
        } catch .rateLimited {
            return .rateLimited
        } catch {
            guard case .unreachable(let reason) = error else { return .unreachable("\(error)") }
            return .unreachable(reason)
        }
    }

    /// The two bits Apple keeps for the device that made `deviceToken` (base64, from
    /// `DCDevice.generateToken()`), asking the development server when the token is a development build's.
    public func bits(deviceToken: String, key: DeviceCheckKey, development: Bool) async throws(Failure) -> DeviceBits {
        let answer = try await send("query_two_bits", fields: "", deviceToken: deviceToken, key: key, development: development)
        // A device whose bits were never set is answered 200 "Failed to find bit state", in plain text.
        guard let object = try? JSONSerialization.jsonObject(with: Data(answer.readableBytesView)) as? [String: Any] else {
            return DeviceBits(bit0: false, bit1: false)
        }
        return DeviceBits(bit0: object["bit0"] as? Bool ?? false, bit1: object["bit1"] as? Bool ?? false)
    }

    /// Sets `bit` (0 or 1) of the device that made `deviceToken` to `value`, leaving the other as it is.
    public func setBit(_ bit: Int, to value: Bool, deviceToken: String, key: DeviceCheckKey, development: Bool) async throws(Failure) {
        precondition(bit == 0 || bit == 1, "DeviceCheck keeps two bits")
        _ = try await send("update_two_bits", fields: #","bit\#(bit)":\#(value)"#, deviceToken: deviceToken, key: key, development: development)
    }

    /// POSTs Apple's request body (the device token, a fresh transaction id, the time in milliseconds,
    /// then `fields`) to `path`; the body of a 200.
    private func send(
        _ path: String, fields: String, deviceToken: String, key: DeviceCheckKey, development: Bool
    ) async throws(Failure) -> ByteBuffer {
        let token: String
        do {
            token = try await key.developerToken()
        } catch {
            throw .unreachable("the JWT could not be signed (\(error))")
        }
        // The device token is base64, which needs no JSON escaping; anything else is refused before Apple.
        guard !deviceToken.isEmpty, deviceToken.utf8.allSatisfy({ $0.isBase64 }) else { throw .invalidDeviceToken }
        let body = #"{"device_token":"\#(deviceToken)","transaction_id":"\#(UUID().uuidString.lowercased())","timestamp":\#(Int64(Date().timeIntervalSince1970 * 1000))\#(fields)}"#
        let answer: (status: Int, body: ByteBuffer)
        do {
            answer = try await outbound.postReadingAnswer(
                "\(development ? developmentURL : baseURL)/v1/\(path)", for: OutboundUse(.apple, appID: nil),
                headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                body: ByteBuffer(string: body), maximumBytes: Self.maximumAnswerBytes)
        } catch {
            throw .unreachable("\(error)")
        }
        switch answer.status {
        case 200..<300: return answer.body
        case 400: throw .invalidDeviceToken
        case 401, 403: throw .keyRefused
        case 429: throw .rateLimited
        default: throw .unreachable("it answered \(answer.status)")
        }
    }
}

extension String {
    /// A server's base URL as Apple's clients join paths to it: without one trailing slash.
    var withoutTrailingSlash: String { hasSuffix("/") ? String(dropLast()) : self }
}

extension UInt8 {
    /// A character of standard base64 (padding included).
    fileprivate var isBase64: Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || self == UInt8(ascii: "+") || self == UInt8(ascii: "/")
            || self == UInt8(ascii: "=")
    }
}
