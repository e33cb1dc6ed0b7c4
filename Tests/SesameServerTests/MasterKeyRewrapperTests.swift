import Crypto
import Logging
import NIOCore
import PostgresNIO
import SesameEncryption
import SesameServer
import SesameStorage
import SesameTestSupport
import Testing

@Suite("Master key rotation re-wraps every stored secret")
struct MasterKeyRewrapperTests {
    let logger = Logger(label: "rewrap-test")

    @Test("secrets under the old key move to the new one, stay readable, and a second run does nothing")
    func rotation() async throws {
        let oldKey = SymmetricKey(size: .bits256)
        let newKey = SymmetricKey(size: .bits256)
        let before = EnvelopeEncryption(keyring: try MasterKeyring(current: oldKey))
        let after = EnvelopeEncryption(keyring: try MasterKeyring(current: newKey, previous: [oldKey]))
        let newOnly = EnvelopeEncryption(keyring: try MasterKeyring(current: newKey))

        try await TestDatabase.withFreshDatabase { url in
            try await TestDatabase.withClient(url) { client in
                try await Migrator().migrate(client, logger: logger)
                try await client.query(
                    "INSERT INTO apps (app_id, team_id, bundle_id, storage_id) VALUES ('T.app', 'T', 'app', '\\x00'::bytea)")
                for user in 0..<3 {
                    let sealed = try before.seal(Array("secret \(user)".utf8), context: "user_data.body:\(user)")
                    let hash = ByteBuffer(bytes: [UInt8(user)])
                    try await client.query(
                        "INSERT INTO user_data (app_id, user_hash, body) VALUES ('T.app', \(hash), \(ByteBuffer(bytes: sealed)))")
                }
                // One written under the new key already, and one under a key nobody has any more.
                let current = try after.seal(Array("already new".utf8), context: "user_data.body:9")
                try await client.query(
                    "INSERT INTO user_data (app_id, user_hash, body) VALUES ('T.app', '\\x09'::bytea, \(ByteBuffer(bytes: current)))")
                let lost = try EnvelopeEncryption(keyring: MasterKeyring(current: SymmetricKey(size: .bits256)))
                    .seal(Array("lost".utf8), context: "user_data.body:8")
                try await client.query(
                    "INSERT INTO user_data (app_id, user_hash, body) VALUES ('T.app', '\\x08'::bytea, \(ByteBuffer(bytes: lost)))")

                let first = try await MasterKeyRewrapper(encryption: after).run(on: client, logger: logger)
                #expect(first == .init(rewrapped: 3, failed: 1))

                for try await (hash, body) in try await client.query("SELECT user_hash, body FROM user_data WHERE user_hash < '\\x03'::bytea")
                    .decode((ByteBuffer, ByteBuffer).self)
                {
                    let user = Array(buffer: hash)[0]
                    #expect(try newOnly.open(Array(buffer: body), context: "user_data.body:\(user)") == Array("secret \(user)".utf8))
                }

                let second = try await MasterKeyRewrapper(encryption: after).run(on: client, logger: logger)
                #expect(second == .init(rewrapped: 0, failed: 1))
            }
        }
    }
}
