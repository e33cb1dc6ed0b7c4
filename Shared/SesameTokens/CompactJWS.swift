import Crypto
import Foundation
import JWTKit
import SesameDomain

/// JSON Web Tokens in compact form (RFC 7515 §7.1), signed with ES256 or authenticated with HS256
/// by swift-crypto directly, on the caller's thread; base64url is `SesameDomain.Base64`'s.
///
/// Why not jwt-kit's `JWTKeyCollection`: it is an actor, so every signature and verification a
/// service makes queued on one executor and hopped there and back (three times per refresh), and
/// each token's JSON went through a JSON encoder made for it. The wire format stays jwt-kit's: the
/// same header fields, the claims encoded by the same `Codable` types, dates in seconds; a token
/// made by either verifies with the other (the tests hold both directions).
/// `docs/upstream/jwt-kit-key-collection-actor.md` is the defect as we would file it, and when this
/// can go (`CompactJWSTests` says when jwt-kit's collection stops being an actor).
///
/// Which algorithm a token may use is the reader's choice, never the header's: `parse` takes the
/// algorithms the kind of token allows, and a key verifies only tokens of its own algorithm.
enum CompactJWS {
    /// The algorithms Sesame writes: ES256 for what others verify with the JWKS, HS256 for refresh
    /// tokens, which auth alone reads.
    enum Algorithm: String, Sendable {
        case es256 = "ES256"
        case hs256 = "HS256"
    }

    /// A key that checks tokens of one algorithm.
    enum VerificationKey: Sendable {
        case es256(P256.Signing.PublicKey)
        case hs256(SymmetricKey)

        var algorithm: Algorithm {
            switch self {
            case .es256: .es256
            case .hs256: .hs256
            }
        }
    }

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
        /// The header's `alg`, one the reader accepts.
        let algorithm: Algorithm
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

    /// The encoded header segment for tokens of `algorithm` by `kid` with header `typ`: made once
    /// per key and kind.
    static func headerSegment(_ algorithm: Algorithm, kid: String, typ: String) throws -> String {
        Base64.urlEncode(try encoder.encode(Header(alg: algorithm.rawValue, kid: kid, typ: typ)))
    }

    /// `claims` signed by `key` under `headerSegment` (an ES256 one).
    static func sign(_ claims: some Encodable, headerSegment: String, key: P256.Signing.PrivateKey) throws -> String {
        let signingInput = try signingInput(claims, headerSegment: headerSegment)
        let signature = try key.signature(for: SHA256.hash(data: Array(signingInput.utf8)))
        return signingInput + "." + Base64.urlEncode(signature.rawRepresentation)
    }

    /// `claims` authenticated by `key` under `headerSegment` (an HS256 one).
    static func authenticate(_ claims: some Encodable, headerSegment: String, key: SymmetricKey) throws -> String {
        let signingInput = try signingInput(claims, headerSegment: headerSegment)
        let code = HMAC<SHA256>.authenticationCode(for: Array(signingInput.utf8), using: key)
        return signingInput + "." + Base64.urlEncode(Array(code))
    }

    private static func signingInput(_ claims: some Encodable, headerSegment: String) throws -> String {
        headerSegment + "." + Base64.urlEncode(try encoder.encode(claims))
    }

    /// Splits and decodes `token`; throws `Malformed` unless it is three unpadded base64url
    /// segments with a JSON header naming one of `algorithms` and no critical extension.
    static func parse(_ token: String, accepting algorithms: Set<Algorithm>) throws -> Parsed {
        // Split as bytes: splitting the String walks it by Character (grapheme breaking), which
        // was half of this function's time.
        let segments = token.utf8.split(separator: UInt8(ascii: "."), maxSplits: 3, omittingEmptySubsequences: false)
        guard segments.count == 3, let lastDot = token.utf8.lastIndex(of: UInt8(ascii: ".")) else {
            throw Malformed(description: "not three segments")
        }
        // Unpadded base64url (RFC 7515 §2) and nothing else in any segment.
        guard let headerBytes = Base64.urlDecode(segments[0]), let payload = Base64.urlDecode(segments[1]),
            let signature = Base64.urlDecode(segments[2])
        else { throw Malformed(description: "a segment is not unpadded base64url") }
        let header: Header
        do {
            header = try decoder.decode(Header.self, from: Data(headerBytes))
        } catch {
            throw Malformed(description: "the header is not a JSON object with alg")
        }
        guard let algorithm = Algorithm(rawValue: header.alg), algorithms.contains(algorithm) else {
            throw Malformed(description: "alg \(header.alg) is not accepted for this token")
        }
        guard header.crit == nil else { throw Malformed(description: "critical header extensions are not supported") }
        return Parsed(
            header: header, algorithm: algorithm, signingInput: token[..<lastDot].utf8, payload: payload, signature: signature)
    }

    /// Whether `parsed`'s signature is `key`'s over its header and payload; never for a key of
    /// another algorithm than the token's.
    static func isSigned(_ parsed: Parsed, by key: VerificationKey) -> Bool {
        guard key.algorithm == parsed.algorithm else { return false }
        return key.verifies(parsed.signature, over: parsed.signingInput)
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

extension CompactJWS.VerificationKey {
    /// Whether `signature` is this key's over `signingInput` (an HMAC compared in constant time).
    func verifies(_ signature: some DataProtocol, over signingInput: some Sequence<UInt8>) -> Bool {
        switch self {
        case .es256(let key):
            guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: Array(signature)) else { return false }
            return key.isValidSignature(signature, for: SHA256.hash(data: Array(signingInput)))
        case .hs256(let key):
            return HMAC<SHA256>.isValidAuthenticationCode(Array(signature), authenticating: Array(signingInput), using: key)
        }
    }
}

/// The verifying half of a key as jwt-kit's claim checks (`JWTPayload.verify(using:)`) receive it.
struct JWSVerifier: JWTAlgorithm {
    let key: CompactJWS.VerificationKey
    var name: String { key.algorithm.rawValue }

    func sign(_ plaintext: some DataProtocol) throws -> [UInt8] {
        throw JWTError.signingAlgorithmFailure(CompactJWS.Malformed(description: "a verifier does not sign"))
    }

    func verify(_ signature: some DataProtocol, signs plaintext: some DataProtocol) throws -> Bool {
        key.verifies(signature, over: Array(plaintext))
    }
}
