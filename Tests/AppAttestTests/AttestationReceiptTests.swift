import AppAttest
import AppAttestTesting
import Crypto
import Foundation
import Testing
@_spi(CMS) @_spi(FixedExpiryValidationTime) import X509

/// App Attest receipts (Apple's "Assessing fraud risk"): the real ones in real devices' attestations
/// verify against Apple Root CA - G3; each step of the verification has a receipt that breaks it.
@Suite("App Attest receipts")
struct AttestationReceiptTests {
    @Test("Apple Root CA - G3 is the one Apple publishes (SHA-256 of its DER)")
    func appleRoot() throws {
        let der = Array(Data(base64Encoded: AppleRootCAG3.pem.split(separator: "\n").dropFirst().dropLast().joined())!)
        #expect(SHA256.hash(data: der).map { String(format: "%02x", $0) }.joined() == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")
        #expect(AppleRootCAG3.certificate.subject.description.contains("Apple Root CA - G3"))
    }

    @Test("the receipt in each real device's attestation verifies at its capture time: ATTEST, the app's, the key's", arguments: RealDeviceFixtureTests.fixtures)
    func realReceipts(name: String) async throws {
        let fixture = try RealDeviceFixtureTests.Fixture.load(name)
        let attested = try await AppAttestVerifier().verifyAttestation(
            fixture.bytes(fixture.attestation), keyId: fixture.bytes(fixture.keyId), clientDataHash: fixture.bytes(fixture.clientDataHash),
            appId: fixture.appId, at: fixture.at)
        // A fixture's time is when its attestation was checked, to within hours (Apple's guide's is a
        // day); its receipt is verified a day later, inside the receipt signer's validity.
        let at = fixture.at.addingTimeInterval(86400)
        let receipt = try await AttestationReceiptVerifier().verify(
            attested.receipt, appID: fixture.appId, publicKey: attested.publicKey, at: at)
        #expect(receipt.kind == .attest && receipt.appID == fixture.appId && receipt.riskMetric == nil)
        #expect(receipt.createdAt <= at && receipt.expiresAt > receipt.createdAt)
        // Another app, another key: refused at their steps.
        await #expect(throws: AttestationReceiptError.self) {
            try await AttestationReceiptVerifier().verify(attested.receipt, appID: "ABCDE12345.other", publicKey: attested.publicKey, at: at)
        }
        await #expect(throws: AttestationReceiptError.self) {
            try await AttestationReceiptVerifier().verify(
                attested.receipt, appID: fixture.appId, publicKey: Array(P256.Signing.PrivateKey().publicKey.x963Representation), at: at)
        }
    }

    @Test("canary: swift-certificates still refuses a real receipt as Apple encodes it (docs/upstream/swift-certificates-cms-ber-receipts.md)")
    func upstreamDefectCanary() async throws {
        let fixture = try RealDeviceFixtureTests.Fixture.load("apple-guide-production.json")
        let attested = try await AppAttestVerifier().verifyAttestation(
            fixture.bytes(fixture.attestation), keyId: fixture.bytes(fixture.keyId), clientDataHash: fixture.bytes(fixture.clientDataHash),
            appId: fixture.appId, at: fixture.at)
        let unmended = await CMS.isValidAttachedSignature(signatureBytes: attested.receipt, trustRoots: CertificateStore([AppleRootCAG3.certificate])) {
            RFC5280Policy(fixedExpiryValidationTime: fixture.at.addingTimeInterval(86400))
        }
        guard case .failure(.invalidCMSBlock) = unmended else {
            Issue.record("swift-certificates now reads Apple's receipts: CMSBERNormalization can go (docs/upstream/swift-certificates-cms-ber-receipts.md)")
            return
        }
    }

    static let appID = "TEAMID1234.com.example.app"

    /// The step at which verifying `bytes` (for `key`, against the software authority's root) fails; nil when it passes.
    static func refusal(
        _ bytes: [UInt8], key: P256.Signing.PublicKey, roots: [SoftwareReceiptAuthority], at now: Date = Date(), maxAge: TimeInterval? = nil
    ) async -> AttestationReceiptError.Step? {
        do {
            _ = try await AttestationReceiptVerifier(additionalRoots: roots.map(\.rootCertificate)).verify(
                bytes, appID: appID, publicKey: Array(key.x963Representation), at: now, maxAge: maxAge)
            return nil
        } catch {
            return error.step
        }
    }

    @Test("a software receipt verifies against its root, with its risk metric; every step has a receipt that breaks it")
    func everyStepBreaks() async throws {
        let authority = SoftwareReceiptAuthority()
        let key = P256.Signing.PrivateKey().publicKey
        let good = try authority.receipt(kind: "RECEIPT", appID: Self.appID, publicKey: key, riskMetric: 7)
        let receipt = try await AttestationReceiptVerifier(additionalRoots: [authority.rootCertificate]).verify(
            good, appID: Self.appID, publicKey: Array(key.x963Representation))
        #expect(receipt.kind == .receipt && receipt.riskMetric == 7 && receipt.notBefore != nil && receipt.bytes == good)

        // signature: one byte of the signed content changed.
        var tampered = good
        let appBytes = Array(Self.appID.utf8)
        let at = try #require((0..<(tampered.count - appBytes.count)).first { Array(tampered[$0..<($0 + appBytes.count)]) == appBytes })
        tampered[at] ^= 0x01
        #expect(await Self.refusal(tampered, key: key, roots: [authority]) == .signature)
        #expect(await Self.refusal(Array("not a receipt".utf8), key: key, roots: [authority]) == .signature)
        // chain: signed by an authority nobody trusts (Apple's root alone, or another test root).
        #expect(await Self.refusal(good, key: key, roots: []) == .chain)
        #expect(await Self.refusal(good, key: key, roots: [SoftwareReceiptAuthority()]) == .chain)
        #expect(await Self.refusal(good, key: key, roots: [authority], at: Date().addingTimeInterval(3 * 86400)) == .chain)
        // payload: a field missing or malformed.
        #expect(await Self.refusal(try authority.receipt(kind: "RECEIPT", appID: Self.appID, publicKey: key, fields: [12: []]), key: key, roots: [authority]) == .payload)
        #expect(await Self.refusal(try authority.receipt(kind: "TICKET", appID: Self.appID, publicKey: key), key: key, roots: [authority]) == .payload)
        #expect(
            await Self.refusal(try authority.receipt(kind: "RECEIPT", appID: Self.appID, publicKey: key, fields: [17: Array("-3".utf8)]), key: key, roots: [authority])
                == .payload)
        // app id, public key.
        #expect(await Self.refusal(try authority.receipt(kind: "ATTEST", appID: "TEAMID1234.com.other", publicKey: key), key: key, roots: [authority]) == .appID)
        #expect(await Self.refusal(good, key: P256.Signing.PrivateKey().publicKey, roots: [authority]) == .publicKey)
        #expect(await Self.refusal(try authority.receipt(kind: "ATTEST", appID: Self.appID, publicKey: key, fields: [3: [0x30, 0x00]]), key: key, roots: [authority]) == .publicKey)
        // freshness: made in the future, or older than the caller allows.
        #expect(await Self.refusal(try authority.receipt(kind: "ATTEST", appID: Self.appID, publicKey: key, createdAt: Date().addingTimeInterval(3600)), key: key, roots: [authority]) == .freshness)
        let old = try authority.receipt(kind: "RECEIPT", appID: Self.appID, publicKey: key, createdAt: Date().addingTimeInterval(-1800))
        #expect(await Self.refusal(old, key: key, roots: [authority]) == nil)
        #expect(await Self.refusal(old, key: key, roots: [authority], maxAge: 300) == .freshness)
    }
}
