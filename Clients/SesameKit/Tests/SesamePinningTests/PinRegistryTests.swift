import Crypto
import Foundation
import SwiftASN1
import Testing
import X509
import CryptoExtras

@testable import SesamePinning

@Suite("Signed pin registry")
struct PinRegistryTests {
    static let signingKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    static let pins = [
        PinRegistry.Pin(domainName: "api.example.com", key: Data(repeating: 1, count: 32).base64EncodedString(), fqdn: "api.example.com", date: "2026-11-23T10:00:00Z"),
        PinRegistry.Pin(domainName: "*.example.com", key: Data(repeating: 2, count: 32).base64EncodedString(), expire: 4_000_000_000, date: "2026-11-23T10:00:00Z"),
        PinRegistry.Pin(domainName: "old.example.com", key: Data(repeating: 3, count: 32).base64EncodedString(), expire: 1_000, date: "2001-01-01T00:00:00Z"),
    ]

    @Test("a signed registry verifies with the public key in each form an app may hold; expired pins are left out")
    func roundTrip() throws {
        let document = Data(try PinRegistry(keys: Self.pins).signedDocument(with: Self.signingKey))
        let text = String(decoding: document, as: UTF8.self)
        #expect(!text.contains("null") && text.hasPrefix(#"{"payload":{"keys":[{"date":"#))
        let pem = Self.signingKey.publicKey.pemRepresentation
        for form in [pem, Data(pem.utf8).base64EncodedString(), Self.signingKey.publicKey.derRepresentation.base64EncodedString()] {
            let verified = try PinRegistry.verified(document, signingKey: try PinRegistry.signingKey(form))
            #expect(verified == Array(Self.pins.prefix(2)))
        }
        #expect(throws: PinRegistry.Refusal.unusableSigningKey) { try PinRegistry.signingKey("not a key") }
    }

    @Test("a changed pin, another signing key, or a broken document is refused")
    func refusals() throws {
        let document = try PinRegistry(keys: Self.pins).signedDocument(with: Self.signingKey)
        let tampered = Data(String(decoding: document, as: UTF8.self).replacingOccurrences(of: "api.example.com", with: "evil.example.com").utf8)
        #expect(throws: PinRegistry.Refusal.badSignature) { try PinRegistry.verified(tampered, signingKey: Self.signingKey.publicKey) }
        let other = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        #expect(throws: PinRegistry.Refusal.badSignature) { try PinRegistry.verified(Data(document), signingKey: other.publicKey) }
        #expect(throws: PinRegistry.Refusal.self) { try PinRegistry.verified(Data("{}".utf8), signingKey: Self.signingKey.publicKey) }
        // A member the signer never wrote changes nothing that was signed: the five fields are rebuilt.
        let extra = Data(String(decoding: document, as: UTF8.self).replacingOccurrences(of: #""date":"2001"#, with: #""note":"x","date":"2001"#).utf8)
        #expect(try PinRegistry.verified(extra, signingKey: Self.signingKey.publicKey, now: Date(timeIntervalSince1970: 0)).count == 3)
    }

    @Test("a registry's sequence is signed: read back as written, and neither altered nor moved to another registry")
    func sequence() throws {
        let document = try PinRegistry(keys: Self.pins, sequence: 41).signedDocument(with: Self.signingKey)
        let text = String(decoding: document, as: UTF8.self)
        #expect(text.contains(#""sesame":{"sequence":41,"signature":"#))
        #expect(try PinRegistry.verifiedRegistry(Data(document), signingKey: Self.signingKey.publicKey).sequence == 41)
        // What the SslPinning SDK reads is unchanged: the payload and its signature.
        #expect(try PinRegistry.verified(Data(document), signingKey: Self.signingKey.publicKey) == Array(Self.pins.prefix(2)))
        #expect(try PinRegistry.verifiedRegistry(Data(try PinRegistry(keys: Self.pins).signedDocument(with: Self.signingKey)), signingKey: Self.signingKey.publicKey).sequence == nil)

        let altered = Data(text.replacingOccurrences(of: #""sequence":41"#, with: #""sequence":99"#).utf8)
        #expect(throws: PinRegistry.Refusal.badSignature) { try PinRegistry.verifiedRegistry(altered, signingKey: Self.signingKey.publicKey) }
        // The freshness of a registry with other pins cannot be grafted onto this one.
        let other = String(decoding: try PinRegistry(keys: [Self.pins[0]], sequence: 99).signedDocument(with: Self.signingKey), as: UTF8.self)
        let graftedFreshness = try #require(other.range(of: #""sesame":{"#)).lowerBound
        let ownFreshness = try #require(text.range(of: #""sesame":{"#)).lowerBound
        let grafted = Data((String(text[..<ownFreshness]) + String(other[graftedFreshness...])).utf8)
        #expect(throws: PinRegistry.Refusal.badSignature) { try PinRegistry.verifiedRegistry(grafted, signingKey: Self.signingKey.publicKey) }
        let fractional = Data(text.replacingOccurrences(of: #""sequence":41"#, with: #""sequence":41.5"#).utf8)
        #expect(throws: PinRegistry.Refusal.self) { try PinRegistry.verifiedRegistry(fractional, signingKey: Self.signingKey.publicKey) }
    }

    @Test("a wildcard covers one label, never the apex or two labels; unpinned hosts are not checked")
    func hosts() {
        #expect(PinnedHosts.pattern("*.example.com", covers: "api.example.com"))
        #expect(PinnedHosts.pattern("*.example.com", covers: "API.Example.com."))
        #expect(!PinnedHosts.pattern("*.example.com", covers: "example.com"))
        #expect(!PinnedHosts.pattern("*.example.com", covers: "a.b.example.com"))
        #expect(!PinnedHosts.pattern("*.example.com", covers: "evilexample.com"))
        #expect(PinnedHosts.pattern("api.example.com", covers: "api.example.com") && !PinnedHosts.pattern("api.example.com", covers: "x.api.example.com"))
        let spki = Data("a SubjectPublicKeyInfo".utf8)
        let hosts = PinnedHosts(pins: [PinRegistry.Pin(domainName: "*.example.com", key: Data(SHA256.hash(data: spki)).base64EncodedString(), date: "d")])
        #expect(hosts.accepts(spki: spki, for: "api.example.com"))
        #expect(!hosts.accepts(spki: Data("another key".utf8), for: "api.example.com"))
        #expect(hosts.accepts(spki: Data("another key".utf8), for: "unpinned.org") && !hosts.isPinned("unpinned.org"))
    }
}

@Suite("SubjectPublicKeyInfo from a certificate")
struct CertificateSPKITests {
    @Test("the SPKI read from the DER is the one swift-certificates writes, for P-256 and RSA keys; junk is refused")
    func extract() throws {
        let p256 = P256.Signing.PrivateKey()
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        for (key, algorithm) in [(Certificate.PrivateKey(p256), Certificate.SignatureAlgorithm.ecdsaWithSHA256), (Certificate.PrivateKey(rsa), .sha256WithRSAEncryption)] {
            let name = try DistinguishedName { CommonName("pinned.example.com") }
            let certificate = try Certificate(
                version: .v3, serialNumber: .init(), publicKey: key.publicKey, notValidBefore: Date(), notValidAfter: Date() + 3600,
                issuer: name, subject: name, signatureAlgorithm: algorithm, extensions: Certificate.Extensions(),
                issuerPrivateKey: key)
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            let spki = try CertificateSPKI.extract(fromCertificateDER: Data(serializer.serializedBytes))
            #expect(spki == Data(try key.publicKey.serializeAsPEM().derBytes))
        }
        #expect(throws: CertificateSPKI.Malformed.self) { try CertificateSPKI.extract(fromCertificateDER: Data([0x30, 0x82, 0xFF])) }
        #expect(throws: CertificateSPKI.Malformed.self) { try CertificateSPKI.extract(fromCertificateDER: Data()) }
    }
}
