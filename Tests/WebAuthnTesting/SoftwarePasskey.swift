import AppAttestTesting
import CBOR
import Crypto
import Foundation
import SesameDomain

/// A passkey held in software, for the dashboard's ceremonies without a browser: an ES256 key
/// and a credential id, answering WebAuthn registrations ("none" attestation) and sign-ins with
/// user presence and verification, for the RP ID `localhost` and the dashboard's origin.
public struct SoftwarePasskey: Sendable {
    public static let rpID = "localhost"
    /// The origin of the test harness's dashboard.
    public static let origin = "http://localhost:8080"

    let key = P256.Signing.PrivateKey()
    public let credentialID = (0..<16).map { _ in UInt8.random(in: 0...255) }
    /// The dashboard's origin, which its client data names.
    public let origin: String
    public private(set) var counter: UInt32 = 0

    public init(origin: String = SoftwarePasskey.origin) {
        self.origin = origin
    }

    public var credentialIDText: String { Base64.urlEncode(credentialID) }

    /// The fields of a registration response to `challenge` (base64url, as the options carry it),
    /// made in a page of `origin` (by default the passkey's).
    public func registration(challenge: String, origin: String? = nil) -> [String: String] {
        let point = Array(key.publicKey.x963Representation)
        let coseKey = CBOREncoder.encode(
            .map([
                CBORMapEntry(key: .unsigned(1), value: .unsigned(2)), CBORMapEntry(key: .unsigned(3), value: .negative(6)),
                CBORMapEntry(key: .negative(0), value: .unsigned(1)), CBORMapEntry(key: .negative(1), value: .bytes(Array(point[1...32]))),
                CBORMapEntry(key: .negative(2), value: .bytes(Array(point[33...64]))),
            ]))
        let length = [UInt8(credentialID.count >> 8), UInt8(credentialID.count & 0xFF)]
        let authenticatorData = Self.authenticatorData(flags: 0x45, counter: 0) + [UInt8](repeating: 0, count: 16) + length + credentialID + coseKey
        let attestationObject = CBOREncoder.encode(
            .map([
                CBORMapEntry(key: .text("fmt"), value: .text("none")), CBORMapEntry(key: .text("attStmt"), value: .map([])),
                CBORMapEntry(key: .text("authData"), value: .bytes(authenticatorData)),
            ]))
        return [
            "challenge": challenge, "attestationObject": Base64.urlEncode(attestationObject),
            "clientDataJSON": Base64.urlEncode(Self.clientData("webauthn.create", challenge: challenge, origin: origin ?? self.origin)),
        ]
    }

    /// The fields of a sign-in response to `challenge`; each counts up.
    public mutating func assertion(challenge: String) throws -> [String: String] {
        counter += 1
        let authenticatorData = Self.authenticatorData(flags: 0x05, counter: counter)
        let clientData = Self.clientData("webauthn.get", challenge: challenge, origin: origin)
        let signature = try key.signature(for: authenticatorData + SHA256.hash(data: clientData))
        return [
            "challenge": challenge, "credentialId": credentialIDText, "authenticatorData": Base64.urlEncode(authenticatorData),
            "clientDataJSON": Base64.urlEncode(clientData), "signature": Base64.urlEncode(Array(signature.derRepresentation)),
        ]
    }

    private static func authenticatorData(flags: UInt8, counter: UInt32) -> [UInt8] {
        Array(SHA256.hash(data: Data(rpID.utf8))) + [flags] + withUnsafeBytes(of: counter.bigEndian, Array.init)
    }

    private static func clientData(_ type: String, challenge: String, origin: String) -> [UInt8] {
        Array(#"{"type":"\#(type)","challenge":"\#(challenge)","origin":"\#(origin)","crossOrigin":false}"#.utf8)
    }
}
