import Foundation
import SesameVault
import Testing

@Suite("Zero-knowledge vault envelope")
struct VaultEnvelopeTests {
    struct Vector: Decodable {
        let password: String
        let plaintext: String
        let envelope: VaultEnvelope
    }

    static func vectors() throws -> [Vector] {
        try (1...3).map { index in
            let url = try #require(Bundle.module.url(forResource: "vector-\(index)", withExtension: "json", subdirectory: "Vectors"))
            return try JSONDecoder().decode(Vector.self, from: Data(contentsOf: url))
        }
    }

    let cheap = VaultEnvelope.Cost(n: 1 << 10, r: 8, p: 1)

    @Test("the published vectors (written by an independent Python implementation) open to their plaintext")
    func publishedVectors() throws {
        for vector in try Self.vectors() {
            #expect(String(decoding: try vector.envelope.open(password: vector.password), as: UTF8.self) == vector.plaintext)
        }
    }

    @Test("a wrong password, a flipped byte or edited parameters give one error, never output")
    func refusals() throws {
        let vector = try #require(try Self.vectors().first)
        #expect(throws: VaultEnvelope.Failure.wrongPasswordOrCorrupted) { try vector.envelope.open(password: vector.password + "x") }
        var flipped = vector.envelope
        var bytes = try #require(Data(base64Encoded: flipped.ciphertext))
        bytes[3] ^= 0x01
        flipped.ciphertext = bytes.base64EncodedString()
        #expect(throws: VaultEnvelope.Failure.wrongPasswordOrCorrupted) { try flipped.open(password: vector.password) }
        var weakened = vector.envelope
        weakened.kdf.n = 1 << 10
        #expect(throws: VaultEnvelope.Failure.wrongPasswordOrCorrupted) { try weakened.open(password: vector.password) }
        #expect(VaultEnvelope.Failure.wrongPasswordOrCorrupted.description == "wrong vault password or corrupted file")

        // Crafted parameters that would exhaust memory or are not scrypt are refused before any work.
        for edit: (inout VaultEnvelope) -> Void in [
            { $0.kdf.n = 1 << 24 }, { $0.kdf.n = 1000 }, { $0.kdf.r = 64 }, { $0.kdf.p = 100 }, { $0.sesameVault = 2 },
            { $0.cipher = "ChaCha20" }, { $0.nonce = "short" },
        ] {
            var envelope = vector.envelope
            edit(&envelope)
            #expect {
                try envelope.open(password: vector.password)
            } throws: { error in
                if case .notAnEnvelope = error as? VaultEnvelope.Failure { return true }
                return false
            }
        }
    }

    @Test("seal then open round-trips; every seal uses a fresh salt and nonce")
    func roundTrip() throws {
        let plaintext = Data(#"{"secret":"value"}"#.utf8)
        let first = try VaultEnvelope.seal(plaintext, password: "vault pass", cost: cheap)
        let second = try VaultEnvelope.seal(plaintext, password: "vault pass", cost: cheap)
        #expect(first.kdf.salt != second.kdf.salt)
        #expect(first.ciphertext != second.ciphertext)
        #expect(try first.open(password: "vault pass") == plaintext)
        let decoded = try #require(try VaultEnvelope.decode(try first.encoded()))
        #expect(decoded == first)
        #expect(!String(decoding: try first.encoded(), as: UTF8.self).contains("secret"))
    }

    @Test("decode: a plain config is not an envelope; a broken envelope is an error")
    func decoding() throws {
        #expect(try VaultEnvelope.decode(Data(#"{"api_keys":{}}"#.utf8)) == nil)
        #expect(try VaultEnvelope.decode(Data("not json".utf8)) == nil)
        #expect(throws: VaultEnvelope.Failure.self) { try VaultEnvelope.decode(Data(#"{"sesameVault":1,"cipher":3}"#.utf8)) }
    }
}
