import Crypto
import CryptoExtras
import Foundation
import SesameJSON


/// The signed key registry the SslPinning SDK reads:
/// `{"payload": {"keys": [Pin…]}, "signature": base64(RSA PKCS#1 v1.5 SHA-512 over JCS(payload))}`,
/// with Sesame's freshness beside it: `"sesame": {"sequence": N, "signature": base64(… over
/// JCS({"keys": […], "sequence": N}))}`. The sequence grows with every change of the app's pins or
/// signing key, so a client that remembers the highest it saw refuses an older registry replayed
/// to it. The SslPinning SDK ignores the member; SesameKit checks it.
public struct PinRegistry: Sendable, Equatable {
    public var keys: [PinRegistry.Pin]
    /// Where the registry stands in the app's history; nil for a registry without freshness.
    public var sequence: Int64?

    public init(keys: [PinRegistry.Pin], sequence: Int64? = nil) {
        self.keys = keys
        self.sequence = sequence
    }

    /// Why a registry was refused.
    public enum Refusal: Error, Sendable, Equatable {
        /// Not the registry's JSON shape.
        case malformed(String)
        /// The signature does not verify with the key the app was given.
        case badSignature
        /// The signing key the app was given cannot be read.
        case unusableSigningKey
    }

    /// `{"keys": […]}`, canonicalised: the bytes the signature covers.
    public func canonicalPayload() throws -> [UInt8] {
        try JSONValue.object(["keys": .array(keys.map(\.canonical))]).canonicalBytes()
    }

    /// `{"keys": […], "sequence": N}`, canonicalised: the bytes the freshness signature covers.
    func canonicalFreshness(sequence: Int64) throws -> [UInt8] {
        try JSONValue.object(["keys": .array(keys.map(\.canonical)), "sequence": .number(Double(sequence))]).canonicalBytes()
    }

    /// The document to serve, signed with `signingKey` (its bytes are canonical too, so the same
    /// registry always reads the same and its ETag holds).
    public func signedDocument(with signingKey: _RSA.Signing.PrivateKey) throws -> [UInt8] {
        var members: [String: JSONValue] = [
            "payload": .object(["keys": .array(keys.map(\.canonical))]),
            "signature": .string(try Self.sign(try canonicalPayload(), with: signingKey)),
        ]
        if let sequence {
            members["sesame"] = .object([
                "sequence": .number(Double(sequence)), "signature": .string(try Self.sign(try canonicalFreshness(sequence: sequence), with: signingKey)),
            ])
        }
        return try JSONValue.object(members).canonicalBytes()
    }

    private static func sign(_ bytes: [UInt8], with key: _RSA.Signing.PrivateKey) throws -> String {
        try key.signature(for: SHA512.hash(data: bytes), padding: .insecurePKCS1v1_5).rawRepresentation.base64EncodedString()
    }

    private static func isValid(_ signatureText: String?, over bytes: [UInt8], key: _RSA.Signing.PublicKey) -> Bool {
        guard let signatureText, let signature = Data(base64Encoded: signatureText) else { return false }
        return key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA512.hash(data: bytes), padding: .insecurePKCS1v1_5)
    }

    /// The pins of `document` once its signature verifies with `signingKey`, without the expired ones.
    /// As the SslPinning client does, each key is rebuilt from its five fields and the payload is
    /// canonicalised again before the check: extra members cannot change what was signed.
    public static func verified(_ document: Data, signingKey: _RSA.Signing.PublicKey, now: Date = Date()) throws(Refusal) -> [PinRegistry.Pin] {
        try verifiedRegistry(document, signingKey: signingKey, now: now).keys
    }

    /// The registry `document` holds once its signatures verify with `signingKey`: its pins (the
    /// live ones) and, when it carries Sesame's freshness, its sequence (whose own signature must
    /// verify too: a sequence cannot be grafted onto another registry).
    public static func verifiedRegistry(_ document: Data, signingKey: _RSA.Signing.PublicKey, now: Date = Date()) throws(Refusal) -> PinRegistry {
        guard let object = try? JSONSerialization.jsonObject(with: document) as? [String: Any],
            let payload = object["payload"] as? [String: Any], let entries = payload["keys"] as? [[String: Any]]
        else { throw .malformed("not {\"payload\": {\"keys\": […]}, \"signature\": …}") }
        var pins: [PinRegistry.Pin] = []
        for entry in entries {
            guard let domainName = entry["domainName"] as? String, let key = entry["key"] as? String, let date = entry["date"] as? String else {
                throw .malformed("a key lacks domainName, key or date")
            }
            let expire = (entry["expire"] as? NSNumber).map { $0.int64Value }
            pins.append(Pin(domainName: domainName, key: key, fqdn: entry["fqdn"] as? String, expire: expire, date: date))
        }
        var registry = PinRegistry(keys: pins)
        guard let canonical = try? registry.canonicalPayload(), isValid(object["signature"] as? String, over: canonical, key: signingKey) else {
            throw .badSignature
        }
        if let freshness = object["sesame"] {
            guard let freshness = freshness as? [String: Any], let number = freshness["sequence"] as? NSNumber,
                Double(number.int64Value) == number.doubleValue
            else { throw .malformed("sesame.sequence is not a whole number") }
            let sequence = number.int64Value
            guard let covered = try? registry.canonicalFreshness(sequence: sequence),
                isValid(freshness["signature"] as? String, over: covered, key: signingKey)
            else { throw .badSignature }
            registry.sequence = sequence
        }
        registry.keys = pins.filter { !$0.isExpired(at: now) }
        return registry
    }

    /// The signing key as an app is given it: PEM, base64 of the PEM (what `base64 -i pub.pem`
    /// prints), or base64 of the DER SubjectPublicKeyInfo.
    public static func signingKey(_ text: String) throws(Refusal) -> _RSA.Signing.PublicKey {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if let key = try? _RSA.Signing.PublicKey(pemRepresentation: trimmed) { return key }
        guard let bytes = Data(base64Encoded: trimmed) else { throw .unusableSigningKey }
        if let pem = String(data: bytes, encoding: .utf8), let key = try? _RSA.Signing.PublicKey(pemRepresentation: pem) { return key }
        if let key = try? _RSA.Signing.PublicKey(derRepresentation: bytes) { return key }
        throw .unusableSigningKey
    }
}

extension PinRegistry {
    /// One pinned key: `key` is base64 SHA-256 of a TLS leaf certificate's SubjectPublicKeyInfo, for
    /// hosts matching `domainName` (`api.example.com`, or `*.example.com` for one label, never the apex).
    public struct Pin: Sendable, Equatable, Codable {
        public var domainName: String
        public var key: String
        /// The host the key was read from, when known.
        public var fqdn: String?
        /// Unix time (seconds) after which the pin no longer counts.
        public var expire: Int64?
        /// When it was added, ISO 8601 (`2025-12-14T21:02:11Z`).
        public var date: String

        public init(domainName: String, key: String, fqdn: String? = nil, expire: Int64? = nil, date: String) {
            self.domainName = domainName
            self.key = key
            self.fqdn = fqdn
            self.expire = expire
            self.date = date
        }

        /// The pin as the registry's payload writes it: optional fields absent, never null (the
        /// SslPinning client rebuilds each key from these five fields before it checks the signature).
        var canonical: JSONValue {
            var members: [String: JSONValue] = ["domainName": .string(domainName), "key": .string(key), "date": .string(date)]
            if let fqdn { members["fqdn"] = .string(fqdn) }
            if let expire { members["expire"] = .number(Double(expire)) }
            return .object(members)
        }

        /// Whether the pin has expired at `now`.
        public func isExpired(at now: Date) -> Bool { expire.map { Double($0) <= now.timeIntervalSince1970 } ?? false }
    }
}

/// Renamed `PinRegistry.Pin`, so that an app's own `Pin` does not collide with it.
@available(*, deprecated, renamed: "PinRegistry.Pin")
public typealias Pin = PinRegistry.Pin
