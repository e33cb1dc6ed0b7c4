import AppAttest
import AppAttestTesting
import CBOR
import Crypto
import Foundation
import Testing

/// Replays the libFuzzer corpus (grown by `Fuzz/run`) through the whole verifier on every test run:
/// inputs that once reached new code in the parsers must still end in a typed refusal, never a
/// trap, and never in an acceptance that names another key. Each input is tried as a whole object
/// and spliced, as authenticator data, into the genuine iPhone capture, so that it also reaches the
/// steps after decoding.
@Suite("Fuzz corpus replay")
struct FuzzCorpusTests {
    static let corpus: [(name: String, bytes: [UInt8])] = {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Corpus")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().compactMap { name in
            (try? Data(contentsOf: folder.appendingPathComponent(name))).map { (name, Array($0)) }
        }
    }()

    let fixture: RealDeviceFixtureTests.Fixture
    let publicKey: P256.Signing.PublicKey

    init() throws {
        fixture = try RealDeviceFixtureTests.Fixture.load("ios-14.4-development.json")
        publicKey = try P256.Signing.PublicKey(x963Representation: fixture.bytes(fixture.expectedPublicKey ?? ""))
    }

    /// `object` (a CBOR map) with the byte string under `key` replaced by `bytes`.
    func splice(_ bytes: [UInt8], as key: String, into object: [UInt8]) throws -> [UInt8] {
        guard case .map(let entries) = try CBORDecoder().decode(object) else { throw CBORError.truncated }
        return CBOREncoder.encode(.map(entries.map { $0.key == .text(key) ? CBORMapEntry(key: $0.key, value: .bytes(bytes)) : $0 }))
    }

    func verifyAttestation(_ bytes: [UInt8]) async throws(AppAttestError) -> AppAttestVerifier.Attestation {
        try await AppAttestVerifier().verifyAttestation(
            bytes, keyId: fixture.bytes(fixture.keyId), clientDataHash: fixture.bytes(fixture.clientDataHash),
            appId: fixture.appId, at: fixture.at)
    }

    func verifyAssertion(_ bytes: [UInt8]) throws(AppAttestError) -> UInt32 {
        try AppAttestVerifier().verifyAssertion(
            bytes, clientDataHash: fixture.bytes(fixture.assertionClientDataHash ?? ""), publicKey: publicKey,
            appId: fixture.appId, previousCounter: 0)
    }

    @Test("the corpus is there")
    func corpusIsPresent() {
        #expect(Self.corpus.count >= 20, "Tests/AppAttestTests/Corpus is missing or nearly empty")
    }

    @Test("the CBOR decoder and the authenticator data parser end every corpus input in a result or a typed error")
    func parsers() {
        var decoded = 0
        for (_, bytes) in Self.corpus {
            if (try? CBORDecoder().decode(bytes)) != nil { decoded += 1 }
            // Typed throws: reaching the next line at all is what is being tested.
            _ = try? AuthenticatorData(bytes, requireAttestedCredential: true)
            _ = try? AuthenticatorData(bytes, requireAttestedCredential: false)
        }
        // The corpus must exercise both outcomes, or it has stopped testing the decoder.
        #expect(decoded > 0 && decoded < Self.corpus.count)
    }

    @Test("corpus inputs as attestation objects, at the capture's time: refused, or the genuine key")
    func attestations() async throws {
        for (name, bytes) in Self.corpus {
            // Only the genuine capture, or a mutation confined to bytes nobody signs (the receipt), can verify.
            if let result = try? await verifyAttestation(bytes) {
                #expect(result.publicKey == publicKey.x963Representation.map { $0 }, "\(name)")
            }
        }
    }

    @Test("corpus inputs as the authenticator data of the genuine attestation are refused, at decoding or at the nonce")
    func attestationAuthenticatorData() async throws {
        let genuine = fixture.bytes(fixture.attestation)
        var refusedAt = Set<AppAttestError.Step>()
        for (name, bytes) in Self.corpus {
            do {
                _ = try await verifyAttestation(try splice(bytes, as: "authData", into: genuine))
                Issue.record("\(name) verified as authenticator data")
            } catch let error as AppAttestError {
                refusedAt.insert(error.step)
            }
        }
        // Inputs must get past decoding into the later steps, or the replay tests only the decoder.
        #expect(refusedAt == [.format, .nonce], "refused at \(refusedAt)")
    }

    @Test("corpus inputs as assertions, or as the genuine assertion's authenticator data, are refused")
    func assertions() throws {
        let genuine = fixture.bytes(fixture.assertion ?? "")
        var refusedAt = Set<AppAttestError.Step>()
        for (name, bytes) in Self.corpus {
            for candidate in [bytes, try splice(bytes, as: "authenticatorData", into: genuine)] where candidate != genuine {
                do {
                    _ = try verifyAssertion(candidate)
                    Issue.record("\(name) verified as an assertion")
                } catch {
                    refusedAt.insert(error.step)
                }
            }
        }
        #expect(refusedAt.contains(.format) && refusedAt.count >= 2, "refused only at \(refusedAt)")
    }
}
