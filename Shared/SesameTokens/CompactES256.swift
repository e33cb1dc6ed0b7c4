import Crypto
import Foundation
import JWTKit
import SesameDomain

/// ES256 JSON Web Tokens in compact form (RFC 7515 §7.1), signed and checked with swift-crypto
/// directly, on the caller's thread; base64url is `SesameDomain.Base64`'s.
///
/// Why not jwt-kit's `JWTKeyCollection`: it is an actor, so every signature and verification a
/// service makes queued on one executor and hopped there and back (three times per refresh), and
/// each token's JSON went through a JSON encoder made for it. The wire format stays jwt-kit's: the
/// same header fields, the claims encoded by the same `Codable` types, dates in seconds; a token
/// made by either verifies with the other (the tests hold both directions).
enum CompactES256 {
    /// The protected header; only what Sesame writes and reads.
    struct Header: Codable, Sendable {
        var alg: String
        var kid: String?
        var typ: String?
        /// Extensions the recipient must understand (RFC 7515 §4.1.11): none are, so any is refused.
        var crit: [String]?
    }

    /// A token split and decoded, before its signature is checked.
    struct Parsed {
        let header: Header
        /// `header.payload`, as the signature covers it.
        let signingInput: Substring.UTF8View
        let payload: [UInt8]
        let signature: [UInt8]
    }

    /// Why a token could not be read (the verifier turns it into a `TokenError`).
    struct Malformed: Error, CustomStringConvertible {
        let description: String
    }

    // Shared: encoding and decoding keep no state between calls, and their options never change.
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = .sortedKeys
        return encoder
    }()
    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return decoder
    }()

    /// The encoded header segment for tokens signed by `kid` with header `typ`: made once per key and kind.
    static func headerSegment(kid: String, typ: String) throws -> String {
        Base64.urlEncode(try encoder.encode(Header(alg: "ES256", kid: kid, typ: typ)))
    }

    /// `claims` signed by `key` under `headerSegment`.
    static func sign(_ claims: some Encodable, headerSegment: String, key: P256.Signing.PrivateKey) throws -> String {
        let payload = Base64.urlEncode(try encoder.encode(claims))
        let signingInput = headerSegment + "." + payload
        let signature = try key.signature(for: SHA256.hash(data: Array(signingInput.utf8)))
        return signingInput + "." + Base64.urlEncode(signature.rawRepresentation)
    }

    /// Splits and decodes `token`; throws `Malformed` unless it is three unpadded base64url
    /// segments with a JSON header naming ES256 and no critical extension.
    static func parse(_ token: String) throws -> Parsed {
        let segments = token.split(separator: ".", maxSplits: 3, omittingEmptySubsequences: false)
        guard segments.count == 3, let lastDot = token.utf8.lastIndex(of: UInt8(ascii: ".")) else {
            throw Malformed(description: "not three segments")
        }
        // Unpadded base64url (RFC 7515 §2) and nothing else in any segment.
        guard let headerBytes = Base64.urlDecode(segments[0].utf8), let payload = Base64.urlDecode(segments[1].utf8),
            let signature = Base64.urlDecode(segments[2].utf8)
        else { throw Malformed(description: "a segment is not unpadded base64url") }
        let header: Header
        do {
            header = try decoder.decode(Header.self, from: Data(headerBytes))
        } catch {
            throw Malformed(description: "the header is not a JSON object with alg")
        }
        guard header.alg == "ES256" else { throw Malformed(description: "alg \(header.alg) is not ES256") }
        guard header.crit == nil else { throw Malformed(description: "critical header extensions are not supported") }
        return Parsed(header: header, signingInput: token[..<lastDot].utf8, payload: payload, signature: signature)
    }

    /// Whether `parsed`'s signature is `key`'s over its header and payload.
    static func isSigned(_ parsed: Parsed, by key: P256.Signing.PublicKey) -> Bool {
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: parsed.signature) else { return false }
        return key.isValidSignature(signature, for: SHA256.hash(data: Array(parsed.signingInput)))
    }

    /// The claims `parsed` carries, decoded (not yet verified: `Claims.verify(using:)`).
    static func claims<Claims: Decodable>(of parsed: Parsed, as _: Claims.Type) throws -> Claims {
        do {
            return try decoder.decode(Claims.self, from: Data(parsed.payload))
        } catch {
            throw Malformed(description: "the claims could not be decoded: \(error)")
        }
    }
}

/// The verifying half of ES256 as jwt-kit's claim checks (`JWTPayload.verify(using:)`) receive it.
struct ES256Verifier: JWTAlgorithm {
    let key: P256.Signing.PublicKey
    var name: String { "ES256" }

    func sign(_ plaintext: some DataProtocol) throws -> [UInt8] {
        throw JWTError.signingAlgorithmFailure(CompactES256.Malformed(description: "a verifier does not sign"))
    }

    func verify(_ signature: some DataProtocol, signs plaintext: some DataProtocol) throws -> Bool {
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: Array(signature)) else { return false }
        return key.isValidSignature(signature, for: SHA256.hash(data: Array(plaintext)))
    }
}
