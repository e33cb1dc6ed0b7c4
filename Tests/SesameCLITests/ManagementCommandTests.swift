import AdminService
import AppAttestTesting
import AppleFake
import Crypto
import SwiftASN1
import X509
import ArgumentParser
import Foundation
import Hummingbird
import OpenAPIRuntime
import HummingbirdTesting
import SesameConfiguration
@testable import SesameCLI
import SesameServer
import SesameStorage
import SesameTestSupport
import Synchronization
import Testing

/// The CLI end to end against a live admin service on a fresh database.
@Suite("sesame CLI against a running admin", .timeLimit(.minutes(2)))
struct ManagementCommandTests {
    static let operatorToken = "cli-test-operator-token-0123456789abcdef"

    /// Runs `arguments` as the `sesame` command line; returns stdout, stderr and the exit status.
    static func sesame(_ arguments: [String]) async -> (out: String, error: String, status: Int32) {
        let console = Console(capturing: true)
        var status: Int32 = 0
        await Console.$current.withValue(console) {
            do {
                var command = try SesameCommand.parse(commandLine: arguments)
                if var asynchronous = command as? any AsyncParsableCommand {
                    try await asynchronous.run()
                } else {
                    try command.run()
                }
            } catch let exit as ExitCode {
                status = exit.rawValue
            } catch {
                console.error("\(error)")
                status = SesameCommand.exitCode(for: error).rawValue
            }
        }
        return (console.output.out, console.output.error, status)
    }

    /// A command's `--json` output read as the type the management API's document gives its reply:
    /// what CI parses keeps the contract.
    static func reply<Reply: Decodable>(_ type: Reply.Type, _ output: String) throws -> Reply {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(Reply.self, from: Data(output.utf8))
    }

    /// An admin on a fresh database; `appleDeviceCheckURL` on 127.0.0.1 is a fake Apple the tests run.
    static func withAdmin(appleDeviceCheckURL: String? = nil, _ body: @Sendable (_ url: String) async throws -> Void) async throws {
        try await TestDatabase.withFreshDatabase { databaseURL in
            var configuration = ServiceConfiguration(
                databaseURL: databaseURL.connectionString, kafkaBrokers: try TestKafka.brokers(), kafkaIdempotence: false,
                masterKey: MasterKeyMaterial(current: Array(repeating: 3, count: 32)), port: 0, operatorToken: operatorToken)
            if let appleDeviceCheckURL {
                configuration.appleDeviceCheckURL = appleDeviceCheckURL
            }
            let app = try AdminService.buildApplication(configuration: configuration)
            try await app.test(.live) { client in
                try await eventually("admin ready") { try await client.execute(uri: "/health/ready", method: .get) { $0.status == .ok } }
                try await body("http://127.0.0.1:\(try #require(client.port))")
            }
        }
    }

    /// Registers TEAMID1234.com.example.app with the operator token; the options that then reach
    /// the admin at `url` with the app's new provisioning key.
    static func registerApp(url: String) async -> [String] {
        let created = await sesame(["keys:create", "--url", url, "--key", operatorToken, "--team-id", "TEAMID1234", "--bundle-id", "com.example.app"])
        return ["--url", url, "--key", created.out.trimmingCharacters(in: .whitespacesAndNewlines)]
    }

    @Test("sesame apple set, show, check and remove: the key is never printed, Apple's verdict is, and check's exit status follows it")
    func appleCredentials() async throws {
        let apple = FakeDeviceCheck()
        let key = P256.Signing.PrivateKey()
        apple.register(keyID: "ABCDE12345", teamID: "TEAMID1234", publicKey: key.publicKey)
        try await apple.run { appleURL in
            try await Self.withAdmin(appleDeviceCheckURL: appleURL) { url in
                let server = await Self.registerApp(url: url)
                let missing = await Self.sesame(["apple", "show"] + server)
                #expect(missing.status == 1 && missing.error.contains("no DeviceCheck key"), "\(missing)")

                let file = try temporaryFile(key.pemRepresentation)
                let set = await Self.sesame(["apple", "set", "--key-id", "ABCDE12345", "--private-key-file", file] + server)
                #expect(set.status == 0 && set.out.contains("ABCDE12345") && set.out.contains("accepted"), "\(set)")
                #expect(!(set.out + set.error).contains("PRIVATE KEY"))
                #expect(await Self.sesame(["apple", "check"] + server).status == 0)

                let shown = await Self.sesame(["apple", "show", "--json"] + server)
                let credentials = try Self.reply(Components.Schemas.AppleCredentials.self, shown.out)
                #expect(credentials.keyId == "ABCDE12345" && credentials.check?.outcome == .accepted)

                // Apple no longer accepts the key: check says so and fails.
                apple.forcedStatus.withLock { $0 = .unauthorized }
                let refused = await Self.sesame(["apple", "check"] + server)
                #expect(refused.status == 1 && refused.out.contains("refused") && refused.error.contains("401"), "\(refused)")

                #expect(await Self.sesame(["apple", "remove"] + server).status == 0)
                #expect(await Self.sesame(["apple", "show"] + server).status == 1)
            }
        }
    }

    @Test("sesame devices revoke --ban and unban reach the ban routes and print their refusals")
    func deviceBans() async throws {
        try await Self.withAdmin { url in
            let server = await Self.registerApp(url: url)
            let device = String(repeating: "A", count: 43)
            let ban = await Self.sesame(["devices", "revoke", "--key-id", device, "--reason", "farm", "--ban"] + server)
            #expect(ban.status == 1 && ban.error.contains("deviceBanBit"), "\(ban)")
            let unban = await Self.sesame(["devices", "unban", "--key-id", device, "--reason", "appeal"] + server)
            #expect(unban.status == 1 && unban.error.contains("banned"), "\(unban)")
        }
    }

    @Test("sesame devices attestation shows the ramp and the last day's counts")
    func attestationStatus() async throws {
        try await Self.withAdmin { url in
            let server = await Self.registerApp(url: url)
            let before = await Self.sesame(["devices", "attestation"] + server)
            #expect(before.status == 0 && before.out.contains("every install attests") && before.out.contains("SUCCESS"), "\(before)")
            let policy = await Self.sesame(["policy", "set", "attestationRamp=2.5", "admitUnattested=true", "attestationRampAutomatic=true"] + server)
            #expect(policy.status == 0, "\(policy)")
            let shown = await Self.sesame(["devices", "attestation"] + server)
            #expect(shown.status == 0 && shown.out.contains("2.5 % of new installs attest (automatic"), "\(shown)")
        }
    }

    @Test("sesame relays set reads the headers from a file, never the command line; list shows their names only; remove")
    func relays() async throws {
        try await Self.withAdmin { url in
            let server = await Self.registerApp(url: url)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("relay-headers-\(UUID().uuidString).json")
            try Data(#"{"Authorization": "Bearer sk-cli-secret"}"#.utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let set = await Self.sesame(
                ["relays", "set", "openai", "--upstream", "https://api.openai.example", "--path", "/v1/chat/completions", "--headers-file", file.path]
                    + server)
            #expect(set.status == 0 && set.out.contains("made"), "\(set)")
            let listed = await Self.sesame(["relays", "list"] + server)
            #expect(listed.status == 0 && listed.out.contains("openai") && listed.out.contains("Authorization") && !listed.out.contains("sk-cli-secret"), "\(listed)")
            let badMethod = await Self.sesame(["relays", "set", "x", "--upstream", "https://a.example", "--path", "/a", "--method", "CONNECT"] + server)
            #expect(badMethod.status == 2, "\(badMethod)")
            #expect(await Self.sesame(["relays", "remove", "openai"] + server).status == 0)
            #expect(await Self.sesame(["relays", "remove", "openai"] + server).status == 1)
        }
    }

    @Test("a reply larger than the CLI reads (32 MiB) ends the command with exit 2 and says so, not with an internal error")
    func replyLimit() async throws {
        let router = Router()
        router.get("v1/admin/config") { _, _ -> Response in
            let body = ByteBuffer(repeating: UInt8(ascii: " "), count: ManagementClient.replyLimit + 1)
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: body))
        }
        try await Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0))).test(.live) { client in
            let url = "http://127.0.0.1:\(try #require(client.port))"
            let oversized = await Self.sesame(["config", "view", "--url", url, "--key", "sk_prod_test"])
            #expect(oversized.status == 2 && oversized.error.contains("larger than 32 MiB"), "\(oversized)")
        }
    }

    func temporaryFile(_ contents: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sesame-cli-\(UUID().uuidString).json").path
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("keys:create, upload, config:view, history, rollback, resolve and delete, in human and JSON form")
    func manageConfig() async throws {
        try await Self.withAdmin { url in
            // Registering an app needs the operator token, which the command takes from the environment only.
            let noOperator = await Self.sesame(["keys:create", "--url", url, "--key", "sk_prod_" + String(repeating: "x", count: 43),
                "--team-id", "TEAMID1234", "--bundle-id", "com.example.app"])
            #expect(noOperator.status == 1)
            #expect(noOperator.error.contains("SESAME_KEY"))

            let created = await Self.sesame(["keys:create", "--url", url, "--key", Self.operatorToken, "--team-id", "TEAMID1234",
                "--bundle-id", "com.example.app", "--name", "ci"])
            #expect(created.status == 0, "\(created.error)")
            let key = created.out.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(key.hasPrefix("sk_prod_") && key.count == 51)
            #expect(created.error.contains("Save this key"))
            let server = ["--url", url, "--key", key]

            let v1 = try temporaryFile(#"{"api_keys":{"stripe":"sk_live_1"}}"#)
            let v2 = try temporaryFile(#"{"api_keys":{"stripe":"sk_live_2"}}"#)
            let upload = await Self.sesame(["upload", "--file", v1, "--ver", "*"] + server)
            #expect(upload.status == 0)
            #expect(upload.out.contains("revision 1"))
            // --json prints the reply alone, so CI can parse it.
            let second = await Self.sesame(["upload", "--file", v2, "--ver", "*", "--json"] + server)
            #expect(second.status == 0)
            let published = try Self.reply(Operations.uploadConfig.Output.Ok.Body.jsonPayload.self, second.out)
            #expect(published.revision == 2, "upload --json printed \(second.out)")
            let bad = await Self.sesame(["upload", "--file", v2, "--ver", "2.x"] + server)
            #expect(bad.status == 1)
            #expect(bad.error.contains("N.N.N"))
            #expect(await Self.sesame(["upload", "--file", "/no/such/file.json", "--ver", "*"] + server).status == 2)

            let view = await Self.sesame(["config:view"] + server)
            #expect(view.out.contains("PATTERN"))
            #expect(view.out.contains("ci (sk_prod_…"))
            let viewJSON = await Self.sesame(["config:view", "--json"] + server)
            let manifest = try Self.reply(Operations.getManifest.Output.Ok.Body.jsonPayload.self, viewJSON.out)
            #expect(manifest.patterns.first?.revision == 2)

            let rollback = await Self.sesame(["config:rollback", "--ver", "*", "--revision", "1"] + server)
            #expect(rollback.status == 0)
            #expect(rollback.out.contains("as revision 3"))
            let history = await Self.sesame(["config", "history", "--ver", "*"] + server)
            #expect(history.out.contains("rollback of 1"))
            let resolve = await Self.sesame(["config:resolve", "--app-version", "2.1.3"] + server)
            #expect(resolve.out.contains("pattern '*', revision 3"))

            // Kill switch, emergency revocation, blob upload.
            #expect(await Self.sesame(["kill-switch", "--versions", "2.1.3"] + server).status != 0)
            let off = await Self.sesame(["kill-switch", "--versions", "2.1.3,1.*", "--reason", "Crashes at launch"] + server)
            #expect(off.status == 0)
            #expect(off.out.contains("Switched 2.1.3, 1.* off"))
            #expect(await Self.sesame(["kill-switch", "--list"] + server).out.contains("Crashes at launch"))
            #expect(await Self.sesame(["config:resolve", "--app-version", "2.1.3"] + server).out.contains("switched off: apps show \"Crashes at launch\""))
            #expect(await Self.sesame(["kill-switch", "--clear", "--versions", "2.1.3,1.*"] + server).status == 0)
            #expect(await Self.sesame(["kill-switch", "--list"] + server).out.contains("No version is switched off"))
            let revoked = await Self.sesame(["revoke", "--ver", "2.*", "--force-refresh-ttl", "300"] + server)
            #expect(revoked.out.contains("must attest again"))
            #expect(await Self.sesame(["config:resolve", "--app-version", "2.1.3"] + server).out.contains("an emergency revocation is in its window"))
            let blobFile = try temporaryFile(String(repeating: "weights ", count: 1000))
            let blob = await Self.sesame(["blob", "upload", "--file", blobFile, "--blob-key", "model.bin"] + server)
            #expect(blob.status == 0, "\(blob.error)")
            #expect(blob.out.contains("8000 bytes"))

            // Deleting everything must be asked for explicitly.
            #expect(await Self.sesame(["config:delete"] + server).status != 0)
            let deleted = await Self.sesame(["config", "delete", "--all"] + server)
            #expect(deleted.out.contains("every pattern"))
            #expect(await Self.sesame(["config:view"] + server).out.contains("No config is published"))

            // A key is revoked by its id, named as an argument; then it is refused, with a hint about SESAME_KEY.
            let listed = await Self.sesame(["keys", "list", "--json"] + server)
            let keyID = try #require(try Self.reply(Operations.listKeys.Output.Ok.Body.jsonPayload.self, listed.out).keys.first?.keyId)
            let revokedKey = await Self.sesame(["keys", "revoke", keyID] + server)
            #expect(revokedKey.status == 0, "\(revokedKey.error)")
            let refused = await Self.sesame(["config:view"] + server)
            #expect(refused.status == 1)
            #expect(refused.error.contains("unknown or revoked"))
            // The key never appears in what the CLI printed after creating it.
            #expect(!view.out.contains(key) && !history.out.contains(key) && !refused.error.contains(key))
        }
    }

    @Test("upload --tier, debug-tokens:create/list/revoke, policy:view/set")
    func tiersAndPolicy() async throws {
        try await Self.withAdmin { url in
            let server = await Self.registerApp(url: url)

            let file = try temporaryFile(#"{"api_keys":{"stripe":"sk"},"features":{"chat":true}}"#)
            let upload = await Self.sesame(["upload", "--file", file, "--ver", "*", "--tier", "features=unattested", "--json"] + server)
            #expect(upload.status == 0, "\(upload.error)")
            let reply = try Self.reply(Operations.uploadConfig.Output.Ok.Body.jsonPayload.self, upload.out)
            #expect(reply.tiers?.additionalProperties == ["features": "unattested"])
            #expect(await Self.sesame(["config:view"] + server).out.contains("features=unattested"))
            let badTier = await Self.sesame(["upload", "--file", file, "--ver", "*", "--tier", "features=trusted"] + server)
            #expect(badTier.status == 2 && badTier.error.contains("unattested, debug, attested"))

            let token = await Self.sesame(["debug-tokens:create", "--name", "ci", "--ttl", "2d"] + server)
            #expect(token.status == 0 && token.out.hasPrefix("sesame_debug_") && token.error.contains("expires in 2d"), "\(token)")
            let tooLong = await Self.sesame(["debug-tokens:create", "--name", "other", "--ttl", "31d"] + server)
            #expect(tooLong.status == 1 && tooLong.error.contains("30 days"))
            let list = await Self.sesame(["debug-tokens:list"] + server)
            #expect(list.out.contains("NAME") && list.out.contains("ci") && !list.out.contains(token.out.trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(await Self.sesame(["debug-tokens:revoke", "ci"] + server).out.contains("revoked"))
            #expect(await Self.sesame(["debug-tokens:revoke", "ci"] + server).status == 1)

            let view = await Self.sesame(["policy:view"] + server)
            #expect(view.out.contains("admitUnattested") && view.out.contains("false"))
            let set = await Self.sesame(["policy:set", "admitUnattested=true", "blobTier=debug"] + server)
            #expect(set.status == 0 && set.out.contains("admitUnattested") && set.out.contains("blobTier"), "\(set)")
            let after = await Self.sesame(["policy:view", "--json"] + server)
            let policy = try Self.reply(Operations.getPolicy.Output.Ok.Body.jsonPayload.self, after.out).policy
            #expect(policy.admitUnattested == true && policy.blobTier == "debug")
            #expect(await Self.sesame(["policy:set", "blobTier=trusted"] + server).status == 1)
            #expect(await Self.sesame(["policy:set", "nonsense"] + server).status == 2)

            // Reading back: a revision's body, a diff, the keys, the devices (none attested here).
            let second = try temporaryFile(#"{"api_keys":{"stripe":"sk_2"},"features":{"chat":true}}"#)
            #expect(await Self.sesame(["upload", "--file", second, "--ver", "*"] + server).status == 0)
            let body = await Self.sesame(["config", "body", "--ver", "*", "--revision", "1"] + server)
            #expect(body.status == 0 && body.out.contains(#""stripe" : "sk""#), "\(body)")
            let diff = await Self.sesame(["config:diff", "--ver", "*", "--from", "1"] + server)
            #expect(diff.out.contains("~ api_keys.stripe: sk → sk_2") && diff.out.contains("tiers changed"), "\(diff)")
            #expect(await Self.sesame(["config:diff", "--ver", "*", "--from", "7"] + server).status == 1)
            let keys = await Self.sesame(["keys:list"] + server)
            #expect(keys.out.contains("HINT") && keys.out.contains("sk_prod_…") && !keys.out.contains(server[3]))
            // Who made the key: the operator token registered the app.
            #expect(keys.out.contains("BY") && keys.out.contains("operator"), "\(keys.out)")
            #expect(await Self.sesame(["devices:list"] + server).out.contains("No attested device"))
            // Pins: from a certificate, listed with the hash computed here, the signing key, rotation, removal.
            let certificate = try SoftwareAttester().rootCertificate
            let certificateFile = try temporaryFile(try certificate.serializeAsPEM().pemString)
            let spki = Data(SHA256.hash(data: try certificate.publicKey.serializeAsPEM().derBytes)).base64EncodedString()
            #expect(await Self.sesame(["pins:add", "--domain", "api.example.com", "--from-cert", certificateFile] + server).status == 0)
            #expect(await Self.sesame(["pins:add", "--domain", "x.example.com"] + server).status == 2)
            #expect(await Self.sesame(["pins:add", "--domain", "*.com", "--spki-sha256", spki] + server).status == 1)
            #expect(await Self.sesame(["pins:list"] + server).out.contains(spki))
            let signingKey = await Self.sesame(["pins:signing-key"] + server).out.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(String(decoding: Data(base64Encoded: signingKey) ?? Data(), as: UTF8.self).hasPrefix("-----BEGIN PUBLIC KEY-----"))
            let prepared = await Self.sesame(["pins:prepare-signing-key"] + server).out.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(await Self.sesame(["pins:signing-key", "--next"] + server).out.trimmingCharacters(in: .whitespacesAndNewlines) == prepared)
            let rotated = await Self.sesame(["pins:rotate-signing-key"] + server).out.trimmingCharacters(in: .whitespacesAndNewlines)
            let current = await Self.sesame(["pins:signing-key"] + server).out.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(!rotated.isEmpty && rotated != signingKey && rotated == prepared && rotated == current)
            #expect(await Self.sesame(["pins:signing-key", "--next"] + server).status == 1)
            #expect(await Self.sesame(["pins:remove", "--domain", "api.example.com", "--spki-sha256", spki] + server).status == 0)
            #expect(await Self.sesame(["pins:list"] + server).out.contains("No pins"))

            let unknownDevice = await Self.sesame(["devices:revoke", "--key-id", String(repeating: "A", count: 43), "--reason", "lost"] + server)
            #expect(unknownDevice.status == 1 && unknownDevice.error.contains("devices"))
        }
    }

    @Test("encrypt → upload → decrypt round trip; a wrong password says so and prints nothing")
    func zeroKnowledgeRoundTrip() async throws {
        try await Self.withAdmin { url in
            let server = await Self.registerApp(url: url)
            let plaintext = #"{"api_keys":{"stripe":"sk_live_zero_knowledge"}}"#
            let file = try temporaryFile(plaintext)
            let encrypted = await Self.sesame(["encrypt", "--file", file, "--vault-pass", "vault password"])
            #expect(encrypted.status == 0)
            let envelope = try String(contentsOfFile: file + ".enc", encoding: .utf8)
            #expect(!envelope.contains("sk_live_zero_knowledge"))

            let upload = await Self.sesame(["upload", "--file", file + ".enc", "--ver", "*"] + server)
            #expect(upload.out.contains("zero-knowledge"))
            let direct = await Self.sesame(["upload", "--file", file, "--ver", "2.*", "--encrypt", "--vault-pass", "vault password"] + server)
            #expect(direct.out.contains("zero-knowledge"))

            let decrypted = await Self.sesame(["decrypt", "--file", file + ".enc", "--vault-pass", "vault password"])
            #expect(decrypted.status == 0)
            #expect(decrypted.out.trimmingCharacters(in: .whitespacesAndNewlines) == plaintext)
            let wrong = await Self.sesame(["decrypt", "--file", file + ".enc", "--vault-pass", "not it"])
            #expect(wrong.status == 1)
            #expect(wrong.out.isEmpty)
            #expect(wrong.error.contains("wrong vault password or corrupted file"))
        }
    }

    @Test("config validate checks offline and against the server's schemas; schema set refuses what is published; upload and encrypt refuse a config that does not match")
    func schemas() async throws {
        try await Self.withAdmin { url in
            let server = await Self.registerApp(url: url)
            let schema = try temporaryFile(#"{"type": "object", "required": ["api"], "properties": {"api": {"type": "string", "pattern": "^https://"}}}"#)
            let good = try temporaryFile(#"{"api": "https://api.example.com"}"#)
            let bad = try temporaryFile(#"{"api": "http://api.example.com", "extra": 1}"#)

            // Offline: no server needed.
            let offline = await Self.sesame(["config", "validate", good, "--schema", schema])
            #expect(offline.status == 0 && offline.out.contains("matches"), "\(offline.error)")
            let refused = await Self.sesame(["config:validate", bad, "--schema", schema])
            #expect(refused.status == 1 && refused.out.contains("/api: must match the pattern ^https://"), "\(refused.out) \(refused.error)")

            #expect(await Self.sesame(["config", "upload", "--file", bad, "--ver", "*"] + server).status == 0)
            let breaks = await Self.sesame(["config", "schema", "set", "--file", schema] + server)
            #expect(breaks.status == 1 && breaks.error.contains("published revision 1"), "\(breaks.error)")
            #expect(await Self.sesame(["config", "upload", "--file", good, "--ver", "*"] + server).status == 0)
            let attached = await Self.sesame(["config", "schema", "set", "--file", schema] + server)
            #expect(attached.status == 0 && attached.out.contains("must now match"), "\(attached.error)")
            // The attachment's time as the server's ISO 8601, not Swift's description of a Date.
            let shown = await Self.sesame(["config", "schema", "show"] + server).out
            #expect(shown.contains("Every pattern") && shown.contains("Z):") && !shown.contains("+0000"), "\(shown)")

            let upload = await Self.sesame(["config", "upload", "--file", bad, "--ver", "2.*"] + server)
            #expect(upload.status == 1 && upload.error.contains("config_invalid") == false && upload.error.contains("/api must match the pattern"), "\(upload.error)")
            #expect(await Self.sesame(["config", "validate", bad, "--ver", "2.*"] + server).status == 1)

            // Zero-knowledge: the server cannot look inside, so the CLI checks before sealing.
            let sealed = await Self.sesame(["encrypt", "--file", bad, "--ver", "2.*", "--vault-pass", "a-test-vault-password"] + server)
            #expect(sealed.status == 1 && sealed.error.contains("nothing was sealed"), "\(sealed.error)")
            #expect(!FileManager.default.fileExists(atPath: bad + ".enc"))
        }
    }

    @Test("webhooks create prints the secret once, list shows it without the secret, remove takes it away; an internal address is refused")
    func webhooks() async throws {
        try await Self.withAdmin { url in
            let server = await Self.registerApp(url: url)
            let privateAddress = await Self.sesame(["webhooks", "create", "--endpoint", "https://10.1.2.3/hook"] + server)
            #expect(privateAddress.status == 1 && privateAddress.error.contains("internal address"), "\(privateAddress.error)")
            let created = await Self.sesame(["webhooks", "create", "--endpoint", "https://hooks.example.com/sesame", "--events", "config.published,kill_switch", "--slack"] + server)
            #expect(created.status == 0, "\(created.error)")
            let secret = created.out.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(secret.hasPrefix("whsec_"))
            let id = try #require(created.error.split(separator: " ").dropFirst().first.map { String($0.dropLast()) })
            let listed = await Self.sesame(["webhooks", "list"] + server)
            #expect(listed.out.contains("https://hooks.example.com/sesame") && listed.out.contains("config.published,kill_switch") && !listed.out.contains(secret))
            #expect(await Self.sesame(["webhooks", "remove", id] + server).status == 0)
            #expect(await Self.sesame(["webhooks", "remove", id] + server).status == 1)
        }
    }

    @Test("under the two-person rule an upload is proposed; changes list shows it; its proposer cannot approve it, a second key does")
    func changes() async throws {
        try await Self.withAdmin { url in
            let ana = await Self.registerApp(url: url)
            let ben = await Self.registerApp(url: url)
            #expect(await Self.sesame(["policy", "set", #"requireApproval=["publish"]"#] + ana).status == 0)
            let file = try temporaryFile(#"{"endpoint": "https://api.example.com"}"#)
            let proposed = await Self.sesame(["config", "upload", "--file", file, "--ver", "*"] + ana)
            #expect(proposed.status == 0 && proposed.out.contains("proposed as change"), "\(proposed.out) \(proposed.error)")
            let listed = await Self.sesame(["changes", "list", "--json"] + ana)
            let change = try Self.reply(Operations.listChanges.Output.Ok.Body.jsonPayload.self, listed.out).changes
            let id = try #require(change.first?.id)
            #expect(change.first?.state == "pending")
            #expect(await Self.sesame(["changes", "show", id] + ben).out.contains("api.example.com"))
            let own = await Self.sesame(["changes", "approve", id] + ana)
            #expect(own.status == 1 && own.error.contains("second person"), "\(own.error)")
            let approved = await Self.sesame(["changes", "approve", id] + ben)
            #expect(approved.status == 0 && approved.out.contains("Approved and applied: Published revision 1"), "\(approved.error)")
        }
    }

    @Test("audit list shows the changes; audit verify prints the head, holds the log to it, and exits 1 when it is not reached")
    func audit() async throws {
        try await Self.withAdmin { url in
            let server = await Self.registerApp(url: url)
            let file = try temporaryFile(#"{"endpoint": "https://api.example.com"}"#)
            #expect(await Self.sesame(["config", "upload", "--file", file, "--ver", "*"] + server).status == 0)
            let listed = await Self.sesame(["audit", "list"] + server)
            #expect(listed.status == 0 && listed.out.contains("config.upload") && listed.out.contains("WHAT"))

            let verified = await Self.sesame(["audit", "verify"] + server)
            #expect(verified.status == 0 && verified.out.contains("The audit log is intact"), "\(verified.error)")
            let head = try #require(verified.out.split(separator: " ").last.map { $0.trimmingCharacters(in: .punctuationCharacters.union(.whitespacesAndNewlines)) })
            #expect(head.count == 64)
            #expect(await Self.sesame(["audit:verify", "--head", head] + server).status == 0)

            let unknown = await Self.sesame(["audit", "verify", "--head", String(repeating: "0", count: 64)] + server)
            #expect(unknown.status == 1 && unknown.out.contains("no longer reaches the head") && unknown.error.contains("failed verification"))
        }
    }

    @Test("upload --rollout, config rollout widen/pause/resume/complete/rollback, config rollouts, resolve --install")
    func rollouts() async throws {
        try await Self.withAdmin { url in
            let server = await Self.registerApp(url: url)
            let first = try temporaryFile(#"{"endpoint": "https://old.example.com"}"#)
            let second = try temporaryFile(#"{"endpoint": "https://new.example.com"}"#)
            #expect(await Self.sesame(["config", "upload", "--file", first, "--ver", "2.*"] + server).status == 0)

            let started = await Self.sesame(["config", "upload", "--file", second, "--ver", "2.*", "--rollout", "5"] + server)
            #expect(started.status == 0)
            #expect(started.out.contains("to 5 % of installs (staged rollout"))
            let busy = await Self.sesame(["config", "upload", "--file", first, "--ver", "2.*"] + server)
            #expect(busy.status != 0)
            #expect(busy.error.contains("rollout_in_progress") || busy.error.contains("staged rollout"))

            #expect(await Self.sesame(["config", "rollout", "widen", "--ver", "2.*"] + server).status != 0)
            let widened = await Self.sesame(["config", "rollout", "widen", "--ver", "2.*", "--percent", "25"] + server)
            #expect(widened.out.contains("now reaches 25 % of installs"))
            #expect(await Self.sesame(["config", "rollout", "pause", "--ver", "2.*"] + server).out.contains("Paused"))
            let outside = await Self.sesame(["config", "resolve", "--app-version", "2.1.3"] + server)
            #expect(outside.out.contains("revision 1"))
            #expect(outside.out.contains("for installs outside a staged rollout at 25 %, paused"))
            #expect(await Self.sesame(["config", "rollout", "resume", "--ver", "2.*"] + server).out.contains("Resumed"))
            let placed = await Self.sesame(["config", "resolve", "--app-version", "2.1.3", "--install", "some-device-key-id"] + server)
            #expect(placed.out.contains("this install is"))

            let listed = await Self.sesame(["config", "rollouts"] + server)
            #expect(listed.out.contains("PERCENT"))
            #expect(listed.out.contains("active"))
            let rolledBack = await Self.sesame(["config", "rollout", "rollback", "--ver", "2.*"] + server)
            #expect(rolledBack.out.contains("Rolled back"))
            #expect(rolledBack.out.contains("as revision 3"))
            #expect(await Self.sesame(["config", "rollouts", "--ver", "2.*"] + server).out.contains("rolled_back"))
            #expect(await Self.sesame(["config", "rollout", "complete", "--ver", "2.*"] + server).status != 0)

            // A device override: set, listed, seen by resolve, removed.
            #expect(await Self.sesame(["config", "override", "set", "--ver", "2.*", "--install", "device-key-id"] + server).status != 0)
            let pinned = await Self.sesame(
                ["config", "override", "set", "--ver", "2.*", "--install", "device-key-id", "--revision", "2", "--label", "Ana's iPhone"] + server)
            #expect(pinned.out.contains("now gets revision 2"))
            #expect(await Self.sesame(["config", "overrides"] + server).out.contains("Ana's iPhone"))
            let overridden = await Self.sesame(["config", "resolve", "--app-version", "2.1.3", "--install", "device-key-id"] + server)
            #expect(overridden.out.contains("revision 2, by this device's override"))
            #expect(await Self.sesame(["config", "override", "remove", "--ver", "2.*", "--install", "device-key-id"] + server).status == 0)
            #expect(await Self.sesame(["config", "overrides"] + server).out.contains("No device overrides"))
        }
    }
}
