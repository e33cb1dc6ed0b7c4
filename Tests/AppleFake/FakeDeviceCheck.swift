import AppAttestTesting
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import Synchronization

/// Apple's DeviceCheck server as its documentation describes it ("Accessing and modifying per-device
/// data"), for tests: `POST /v1/query_two_bits` and `/v1/update_two_bits`, each authenticated by an
/// ES256 JWT (`kid` a key id, `iss` a team id) that must verify with a key the test registered
/// (`401 Unable to verify authorization token` otherwise), then a device token it issued with
/// `deviceToken(for:)` (`400 Missing or incorrectly formatted device token payload` otherwise). It keeps
/// two bits per device as Apple does: a device never set is answered `200 Failed to find bit state`,
/// one set `200 {"bit0":…,"bit1":…,"last_update_time":"YYYY-MM"}`; an update changes only the bits it
/// names. It runs on 127.0.0.1.
public final class FakeDeviceCheck: Sendable {
    /// A key Apple would know: the team it belongs to and its public half.
    struct RegisteredKey: Sendable {
        let teamID: String
        let publicKey: P256.Signing.PublicKey
    }

    private let keys = Mutex<[String: RegisteredKey]>([:])
    /// When set, every call is answered this status first (Apple's `429`, a `500`).
    public let forcedStatus = Mutex<HTTPResponse.Status?>(nil)
    /// Calls received, by path.
    public let calls = Mutex<[String]>([])
    /// The device each token issued names (a device makes a new token each time it is asked).
    private let tokens = Mutex<[String: String]>([:])
    /// Each device's bits, once set.
    private let bits = Mutex<[String: (bit0: Bool, bit1: Bool)]>([:])

    /// Signs the receipts its App Attest data server (`POST /v1/attestationData`) answers with; that
    /// server answers 404 without one.
    public let receipts: SoftwareReceiptAuthority?
    /// The risk metric reported for a key (by its X9.63 public key); `defaultRiskMetric` when not set.
    public let riskMetrics = Mutex<[Data: Int]>([:])
    public let defaultRiskMetric = Mutex<Int>(1)
    /// Receipts traded, in order.
    public let trades = Mutex<Int>(0)

    public init(receipts: SoftwareReceiptAuthority? = nil) {
        self.receipts = receipts
    }

    /// Apple knows `publicKey` as key `keyID` of `teamID`.
    public func register(keyID: String, teamID: String, publicKey: P256.Signing.PublicKey) {
        keys.withLock { $0[keyID] = RegisteredKey(teamID: teamID, publicKey: publicKey) }
    }

    /// A fresh token of `device`, as `DCDevice.generateToken()` would make on it (base64).
    public func deviceToken(for device: String) -> String {
        let token = Data((0..<96).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        tokens.withLock { $0[token] = device }
        return token
    }

    /// `device`'s bits as Apple keeps them; nil when never set.
    public func bits(of device: String) -> (bit0: Bool, bit1: Bool)? {
        bits.withLock { $0[device] }
    }

    /// Sets `device`'s bits, as an earlier update would have.
    public func setBits(of device: String, bit0: Bool, bit1: Bool) {
        bits.withLock { $0[device] = (bit0, bit1) }
    }

    /// Runs the fake while `body` runs; `body` gets its base URL (`http://127.0.0.1:PORT`).
    public func run(_ body: @Sendable (String) async throws -> Void) async throws {
        let router = Router()
        for path in ["v1/query_two_bits", "v1/update_two_bits"] {
            router.post(RouterPath(stringLiteral: path)) { request, _ -> Response in
                self.calls.withLock { $0.append(path) }
                let body = try await request.body.collect(upTo: 64 * 1024)
                if let status = self.forcedStatus.withLock({ $0 }) { return Self.text(status, "Forced by the test") }
                guard let bearer = request.headers[.authorization], bearer.hasPrefix("Bearer "), self.verifies(String(bearer.dropFirst(7))) else {
                    return Self.text(.unauthorized, "Unable to verify authorization token")
                }
                guard let fields = try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any],
                    let token = fields["device_token"] as? String, fields["transaction_id"] is String, fields["timestamp"] is NSNumber,
                    let device = self.tokens.withLock({ $0[token] })
                else { return Self.text(.badRequest, "Missing or incorrectly formatted device token payload") }
                if path == "v1/update_two_bits" {
                    self.bits.withLock { bits in
                        var current = bits[device] ?? (false, false)
                        if let bit0 = fields["bit0"] as? Bool { current.bit0 = bit0 }
                        if let bit1 = fields["bit1"] as? Bool { current.bit1 = bit1 }
                        bits[device] = current
                    }
                    return Self.text(.ok, "")
                }
                guard let current = self.bits(of: device) else { return Self.text(.ok, "Failed to find bit state") }
                return Response(
                    status: .ok, headers: [.contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(string: #"{"bit0":\#(current.bit0),"bit1":\#(current.bit1),"last_update_time":"2026-11"}"#)))
            }
        }
        // Apple's App Attest data server ("Assessing fraud risk"): the JWT as `Authorization` (no scheme),
        // the receipt base64 as the body; a newer receipt, base64, with the key's risk metric.
        router.post("v1/attestationData") { request, _ -> Response in
            self.calls.withLock { $0.append("v1/attestationData") }
            let body = try await request.body.collect(upTo: 256 * 1024)
            guard let receipts = self.receipts else { return Self.text(.notFound, "No receipt authority") }
            if let status = self.forcedStatus.withLock({ $0 }) { return Self.text(status, "Forced by the test") }
            guard let token = request.headers[.authorization], self.verifies(token) else {
                return Self.text(.unauthorized, "Unable to verify authorization token")
            }
            guard let receipt = Data(base64Encoded: String(buffer: body)), let subject = receipts.subject(of: Array(receipt)) else {
                return Self.text(.badRequest, "Invalid receipt")
            }
            let risk = self.riskMetrics.withLock { $0[subject.publicKey.x963Representation] } ?? self.defaultRiskMetric.withLock { $0 }
            let fresh = try receipts.receipt(kind: "RECEIPT", appID: subject.appID, publicKey: subject.publicKey, riskMetric: risk)
            self.trades.withLock { $0 += 1 }
            return Self.text(.ok, Data(fresh).base64EncodedString())
        }
        try await Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0))).test(.live) { client in
            try await body("http://127.0.0.1:\(client.port ?? 0)")
        }
    }

    /// Apple answers in plain text.
    static func text(_ status: HTTPResponse.Status, _ message: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: message)))
    }

    /// Whether `jwt` is ES256, names a registered key as `kid` and its team as `iss`, was issued
    /// within the last hour, and verifies with that key.
    func verifies(_ jwt: String) -> Bool {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let headerBytes = Self.base64URL(parts[0]), let claimBytes = Self.base64URL(parts[1]),
            let signatureBytes = Self.base64URL(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerBytes) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimBytes) as? [String: Any],
            header["alg"] as? String == "ES256", let kid = header["kid"] as? String,
            let key = keys.withLock({ $0[kid] }), claims["iss"] as? String == key.teamID,
            let issuedAt = (claims["iat"] as? NSNumber)?.doubleValue, abs(Date().timeIntervalSince1970 - issuedAt) < 3600,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes)
        else { return false }
        return key.publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8))
    }

    static func base64URL(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
