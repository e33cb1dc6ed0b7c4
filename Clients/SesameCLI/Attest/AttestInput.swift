import AppAttest
import Crypto
import Foundation
import SesameDomain

/// Input the CLI cannot use: not JSON, a missing field, bad base64. Exit status 2.
public struct AttestInputError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}

/// `sesame attest verify` input.
struct AttestationInput: Decodable {
    var attestation: String
    var keyId: String
    var clientDataHash: String
    var appId: String
    var environment: AppAttestEnvironment?
    var at: String?
}

/// `sesame attest verify-assertion` input.
struct AssertionInput: Decodable {
    var assertion: String
    var clientDataHash: String
    var publicKey: String
    var appId: String
    var previousCounter: UInt32
}

/// Parsing helpers that turn each bad field into a message naming it.
enum AttestInputParsing {
    static func decode<Input: Decodable>(_ type: Input.Type, from json: Data) throws(AttestInputError) -> Input {
        do {
            return try JSONDecoder().decode(type, from: json)
        } catch DecodingError.keyNotFound(let key, _) {
            throw AttestInputError("missing field \"\(key.stringValue)\"")
        } catch DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context) {
            throw AttestInputError("wrong type for \"\(context.codingPath.map(\.stringValue).joined(separator: "."))\"")
        } catch DecodingError.dataCorrupted(let context) where !context.codingPath.isEmpty {
            throw AttestInputError("invalid value for \"\(context.codingPath.map(\.stringValue).joined(separator: "."))\"")
        } catch {
            throw AttestInputError("the input is not a JSON object")
        }
    }

    /// Standard or URL-safe base64, padded or not.
    static func base64(_ text: String, field: String) throws(AttestInputError) -> [UInt8] {
        guard let bytes = Base64.decode(text) else { throw AttestInputError("\"\(field)\" is not base64") }
        return bytes
    }

    /// ISO 8601, with or without fractional seconds.
    static func date(_ text: String, field: String) throws(AttestInputError) -> Date {
        if let date = try? Date(text, strategy: .iso8601) { return date }
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
        throw AttestInputError("\"\(field)\" is not an ISO 8601 time")
    }

    /// A PEM public key, or base64 of the 65-byte X9.63 point.
    static func publicKey(_ text: String) throws(AttestInputError) -> P256.Signing.PublicKey {
        if text.contains("-----BEGIN") {
            guard let key = try? P256.Signing.PublicKey(pemRepresentation: text) else {
                throw AttestInputError("\"publicKey\" is not a P-256 PEM public key")
            }
            return key
        }
        let bytes = try base64(text, field: "publicKey")
        guard let key = try? P256.Signing.PublicKey(x963Representation: bytes) else {
            throw AttestInputError("\"publicKey\" is not a 65-byte X9.63 P-256 point")
        }
        return key
    }
}
