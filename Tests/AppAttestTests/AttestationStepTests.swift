import AppAttest
import AppAttestTesting
import Crypto
import Foundation
import Testing

/// Each test breaks exactly one step of Apple's attestation validation and expects that step's error.
@Suite("Attestation: every validation step has a test that breaks it")
struct AttestationStepTests {
    static let appId = "TEAMID1234.com.example.app"
    let now = Date()
    let attester: SoftwareAttester
    let key: SoftwareAttester.DeviceKey
    let clientDataHash = Array(SHA256.hash(data: Array("challenge".utf8)))
    let verifier: AppAttestVerifier

    init() throws {
        attester = try SoftwareAttester(now: now)
        key = attester.generateKey()
        verifier = AppAttestVerifier(additionalRoots: [attester.rootCertificate])
    }

    func verify(_ recipe: SoftwareAttester.Recipe, environment: AppAttestEnvironment? = nil, verifier: AppAttestVerifier? = nil) async throws
        -> AppAttestVerifier.Attestation
    {
        try await (verifier ?? self.verifier).verifyAttestation(
            try attester.attestation(from: recipe), keyId: key.keyId, clientDataHash: clientDataHash, appId: Self.appId,
            environment: environment, at: now)
    }

    var recipe: SoftwareAttester.Recipe { attester.recipe(for: key, clientDataHash: clientDataHash, appId: Self.appId) }

    @Test("a correct software attestation verifies, in both environments, with trailing authenticator data")
    func valid() async throws {
        let result = try await verify(recipe)
        #expect(result.environment == .development)
        #expect(result.publicKey == Array(key.publicKey.x963Representation))
        var production = attester.recipe(for: key, clientDataHash: clientDataHash, appId: Self.appId, environment: .production)
        production.trailingAuthenticatorData = Array("apple_bundle_version_01".utf8)
        #expect(try await verify(production, environment: .production).environment == .production)
    }

    @Test("chain: the test root is not trusted unless added")
    func untrustedRoot() async throws {
        await #expect(throws: AppAttestError(.chain, "")) { try await verify(recipe, verifier: AppAttestVerifier()) }
    }

    @Test("format: an x5c without the intermediate is refused before any chain is built")
    func missingIntermediate() async throws {
        var broken = recipe
        broken.includeIntermediate = false
        await #expect(throws: AppAttestError(.format, "")) { try await verify(broken) }
    }

    @Test("chain: outside the certificates' validity the chain fails")
    func expired() async throws {
        let attestation = try attester.attestation(from: recipe)
        await #expect(throws: AppAttestError(.chain, "")) {
            try await verifier.verifyAttestation(
                attestation, keyId: key.keyId, clientDataHash: clientDataHash, appId: Self.appId, at: now.addingTimeInterval(3 * 86400))
        }
    }

    @Test("nonce: a certificate over another clientDataHash is refused")
    func nonce() async throws {
        var broken = recipe
        broken.nonceClientDataHash = Array(SHA256.hash(data: Array("another challenge".utf8)))
        await #expect(throws: AppAttestError(.nonce, "")) { try await verify(broken) }
    }

    @Test("keyId: a certificate for another key is refused")
    func keyId() async throws {
        var broken = recipe
        broken.certifiedKey = P256.Signing.PrivateKey().publicKey
        await #expect(throws: AppAttestError(.keyId, "")) { try await verify(broken) }
    }

    @Test("rpIdHash: an attestation for another App ID is refused")
    func rpIdHash() async throws {
        var broken = recipe
        broken.rpIdHash = Array(SHA256.hash(data: Array("OTHERTEAM1.com.example.app".utf8)))
        await #expect(throws: AppAttestError(.rpIdHash, "")) { try await verify(broken) }
    }

    @Test("counter: an attestation whose counter is not 0 is refused")
    func counter() async throws {
        var broken = recipe
        broken.counter = 1
        await #expect(throws: AppAttestError(.counter, "")) { try await verify(broken) }
    }

    @Test("aaguid: an unknown AAGUID, or the wrong environment, is refused")
    func aaguid() async throws {
        var broken = recipe
        broken.aaguid = Array("appattestdevelo!".utf8)
        await #expect(throws: AppAttestError(.aaguid, "")) { try await verify(broken) }
        await #expect(throws: AppAttestError(.aaguid, "")) { try await verify(recipe, environment: .production) }
    }

    @Test("credentialId: a credential id other than the key id is refused")
    func credentialId() async throws {
        var broken = recipe
        broken.credentialId = Array(broken.credentialId.reversed())
        await #expect(throws: AppAttestError(.credentialId, "")) { try await verify(broken) }
    }

    @Test("format: another attestation format is refused")
    func format() async throws {
        var broken = recipe
        broken.fmt = "packed"
        await #expect(throws: AppAttestError(.format, "")) { try await verify(broken) }
    }
}

@Suite("Assertion: every validation step has a test that breaks it")
struct AssertionStepTests {
    static let appId = "TEAMID1234.com.example.app"
    let attester: SoftwareAttester
    let key: SoftwareAttester.DeviceKey
    let clientDataHash = Array(SHA256.hash(data: Array(#"{"challenge":"abc"}"#.utf8)))
    let verifier = AppAttestVerifier()

    init() throws {
        attester = try SoftwareAttester()
        key = attester.generateKey()
    }

    @Test("a correct assertion returns its counter")
    func valid() throws {
        let assertion = try attester.assert(key, clientDataHash: clientDataHash, appId: Self.appId, counter: 7)
        #expect(try verifier.verifyAssertion(assertion, clientDataHash: clientDataHash, publicKey: key.publicKey, appId: Self.appId, previousCounter: 6) == 7)
    }

    @Test("signature: another key's signature, or other client data, is refused")
    func signature() throws {
        let forged = try attester.assert(key, clientDataHash: clientDataHash, appId: Self.appId, counter: 1, signingKey: P256.Signing.PrivateKey())
        #expect(throws: AppAttestError(.signature, "")) {
            try verifier.verifyAssertion(forged, clientDataHash: clientDataHash, publicKey: key.publicKey, appId: Self.appId, previousCounter: 0)
        }
        let genuine = try attester.assert(key, clientDataHash: clientDataHash, appId: Self.appId, counter: 1)
        #expect(throws: AppAttestError(.signature, "")) {
            try verifier.verifyAssertion(genuine, clientDataHash: Array(clientDataHash.reversed()), publicKey: key.publicKey, appId: Self.appId, previousCounter: 0)
        }
    }

    @Test("rpIdHash: an assertion made for another App ID is refused")
    func rpIdHash() throws {
        let assertion = try attester.assert(key, clientDataHash: clientDataHash, appId: "OTHERTEAM1.com.example.app", counter: 1)
        #expect(throws: AppAttestError(.rpIdHash, "")) {
            try verifier.verifyAssertion(assertion, clientDataHash: clientDataHash, publicKey: key.publicKey, appId: Self.appId, previousCounter: 0)
        }
    }

    @Test("counter: a counter equal to or below the stored one is a replay", arguments: [UInt32(5), 6])
    func counter(previous: UInt32) throws {
        let assertion = try attester.assert(key, clientDataHash: clientDataHash, appId: Self.appId, counter: 5)
        #expect(throws: AppAttestError(.counter, "")) {
            try verifier.verifyAssertion(assertion, clientDataHash: clientDataHash, publicKey: key.publicKey, appId: Self.appId, previousCounter: previous)
        }
    }

    @Test("format: bytes that are not an assertion are refused")
    func format() {
        for garbage: [UInt8] in [[], [0xa0], [0xa1, 0x61, 0x61, 0x01], Array(repeating: 0xff, count: 40)] {
            #expect(throws: AppAttestError(.format, "")) {
                try verifier.verifyAssertion(garbage, clientDataHash: clientDataHash, publicKey: key.publicKey, appId: Self.appId, previousCounter: 0)
            }
        }
    }
}
