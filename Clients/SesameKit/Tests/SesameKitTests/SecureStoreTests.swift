import Crypto
import Foundation
import Testing

@testable import SesameKit

@Suite("Secure stores")
struct SecureStoreTests {
    @Test("the encrypted file store keeps items across instances, sealed, names hidden; a swapped file or another key does not open")
    func encryptedFileStore() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sesamekit-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = SymmetricKey(size: .bits256)
        let store = try EncryptedFileStore(directory: directory, key: key)
        #expect(try store.data(for: "sesame.refreshToken") == nil)
        try store.set(Data("refresh-secret".utf8), for: "sesame.refreshToken")
        try store.set(Data("key-id".utf8), for: "sesame.appAttestKeyID")
        #expect(try EncryptedFileStore(directory: directory, key: key).data(for: "sesame.refreshToken") == Data("refresh-secret".utf8))

        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(files.count == 2)
        for file in files {
            let bytes = try Data(contentsOf: directory.appendingPathComponent(file))
            #expect(!String(decoding: bytes, as: UTF8.self).contains("refresh-secret"))
            #expect(!file.contains("sesame"))
        }
        #expect(throws: (any Error).self) { try EncryptedFileStore(directory: directory, key: SymmetricKey(size: .bits256)).data(for: "sesame.refreshToken") }

        // One item's file in another's place does not open as the other.
        let refresh = directory.appendingPathComponent(files.first { try! Data(contentsOf: directory.appendingPathComponent($0)).count > 40 } ?? files[0])
        let other = directory.appendingPathComponent(files.first { directory.appendingPathComponent($0) != refresh }!)
        try FileManager.default.removeItem(at: other)
        try FileManager.default.copyItem(at: refresh, to: other)
        #expect(throws: (any Error).self) {
            _ = try store.data(for: "sesame.refreshToken")
            _ = try store.data(for: "sesame.appAttestKeyID")
        }

        try store.remove("sesame.refreshToken")
        try store.remove("sesame.refreshToken")
        #expect(try store.data(for: "sesame.refreshToken") == nil)
    }

    @Test("the in-memory store saves, replaces and forgets")
    func inMemory() throws {
        let store = InMemorySecureStore()
        try store.set(Data([1]), for: "a")
        try store.set(Data([2]), for: "a")
        #expect(try store.data(for: "a") == Data([2]))
        try store.remove("a")
        #expect(try store.data(for: "a") == nil && store.keys.isEmpty)
    }
}
