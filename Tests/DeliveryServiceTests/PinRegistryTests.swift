import CryptoExtras
import Foundation
import PostgresNIO
import HTTPTypes
import HummingbirdTesting
import NIOFoundationEssentialsCompat
import SesamePinning
import SesameTestSupport
import Testing

/// The pin registry end to end: pins added through admin, signed and served by every delivery
/// instance, verified by an independent Python client (rfc8785 + cryptography) with the public key
/// admin hands out; rotation, removal and expiry.
@Suite("Pin registry: admin → delivery → an independent verifier", .timeLimit(.minutes(3)))
struct PinRegistryServingTests {
    static let path = "/v1/pins/\(DeliveryHarness.teamID).\(DeliveryHarness.bundleID).json"
    static let verifier = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("verify_pin_registry.py").path

    /// What the Python client says of `document` with `signingKeyBase64`: the domains, or nil when refused.
    static func pythonVerifies(_ document: Data, signingKeyBase64: String) throws -> [String]? {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pins-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try document.write(to: folder.appendingPathComponent("registry.json"))
        try Data(signingKeyBase64.utf8).write(to: folder.appendingPathComponent("key.b64"))
        let result = try TestPython.run(verifier, [folder.appendingPathComponent("registry.json").path, folder.appendingPathComponent("key.b64").path])
        guard result.status == 0 else { return nil }
        return try JSONDecoder().decode([String].self, from: Data(result.output.utf8))
    }

    func registry(_ harness: DeliveryHarness, instance: Int = 0, ifNoneMatch: String? = nil) async throws -> (HTTPResponse.Status, HTTPFields, Data) {
        var headers: HTTPFields = [:]
        if let ifNoneMatch { headers[.ifNoneMatch] = ifNoneMatch }
        return try await harness.deliveries[instance].execute(uri: Self.path, method: .get, headers: headers) {
            ($0.status, $0.headers, Data(buffer: $0.body))
        }
    }

    @Test("signed, served without a token, verified by rfc8785 + cryptography; rotation, removal and expiry reach the apps")
    func registry() async throws {
        try await DeliveryHarness.run { harness in
            #expect(try await registry(harness).0 == .notFound)
            #expect(try await harness.manageReply(.get, "pins/signing-key", [:]).errorCode == "no_signing_key")
            let apiKey = Data(repeating: 1, count: 32).base64EncodedString()
            let wildKey = Data(repeating: 2, count: 32).base64EncodedString()
            for bad: [String: Any] in [
                ["domainName": "*.com", "key": apiKey], ["domainName": "*", "key": apiKey], ["domainName": "a..b", "key": apiKey],
                ["domainName": "api.example.com", "key": "c2hvcnQ="], ["domainName": "api.example.com", "key": apiKey, "expire": 1000],
            ] {
                #expect(try await harness.manageReply(.post, "pins", bad).errorCode == "invalid_request", "\(bad)")
            }
            #expect(try await harness.manageReply(.post, "pins", ["domainName": "API.example.com", "key": apiKey, "fqdn": "api.example.com"]).status == .ok)
            let expire = Int(Date().timeIntervalSince1970) + 3_600
            #expect(try await harness.manageReply(.post, "pins", ["domainName": "*.example.com", "key": wildKey, "expire": expire]).status == .ok)
            let signing = try #require(try await harness.manageReply(.get, "pins/signing-key", [:]).json["active"] as? [String: Any])
            let firstKey = try #require(signing["base64"] as? String)
            #expect((signing["pem"] as? String)?.hasPrefix("-----BEGIN PUBLIC KEY-----") == true)

            var document = Data()
            for instance in harness.deliveries.indices {
                try await eventually("delivery \(instance) serves both pins") {
                    let (status, _, body) = try await registry(harness, instance: instance)
                    document = body
                    return status == .ok && (try? PinRegistry.verified(body, signingKey: PinRegistry.signingKey(firstKey)).count) == 2
                }
            }
            let text = String(decoding: document, as: UTF8.self)
            #expect(!text.contains("null") && text.contains(#""fqdn":"api.example.com""#) && text.contains(#""expire":\#(expire)"#))
            let firstSequence = try #require(try PinRegistry.verifiedRegistry(document, signingKey: PinRegistry.signingKey(firstKey)).sequence)
            #expect(try Self.pythonVerifies(document, signingKeyBase64: firstKey) == ["*.example.com", "api.example.com"])
            let (_, headers, _) = try await registry(harness)
            let etag = try #require(headers[.eTag])
            #expect(headers[.cacheControl] == "public, max-age=300")
            #expect(try await registry(harness, ifNoneMatch: etag).0 == .notModified)

            // Rotation as documented: the next key is prepared (apps ship it) while the old one still
            // signs; the rotation switches to exactly that key, which the old one no longer verifies.
            let prepared = try await harness.manageReply(.post, "pins/prepare-signing-key", ["bits": 2048])
            let secondKey = try #require(prepared.json["base64"] as? String)
            #expect(secondKey != firstKey)
            let both = try await harness.manageReply(.get, "pins/signing-key", [:]).json
            #expect((both["active"] as? [String: Any])?["base64"] as? String == firstKey && (both["next"] as? [String: Any])?["base64"] as? String == secondKey)
            #expect(try Self.pythonVerifies(try await registry(harness).2, signingKeyBase64: firstKey) != nil)
            let rotated = try await harness.manageReply(.post, "pins/rotate-signing-key", [:])
            #expect(rotated.json["base64"] as? String == secondKey)
            #expect((try await harness.manageReply(.get, "pins/signing-key", [:]).json["next"]) == nil)
            try await eventually("the registry is signed with the new key") {
                let body = try await registry(harness).2
                document = body
                return (try? PinRegistry.verified(body, signingKey: PinRegistry.signingKey(secondKey))) != nil
            }
            #expect(try Self.pythonVerifies(document, signingKeyBase64: secondKey) != nil)
            #expect(try Self.pythonVerifies(document, signingKeyBase64: firstKey) == nil)
            #expect(try await harness.manageReply(.post, "pins/rotate-signing-key", ["bits": 1024]).errorCode == "invalid_request")

            // Removal, and a pin that expires while served is left out without another change.
            #expect(try await harness.manageReply(.delete, "pins?domainName=*.example.com&key=\(wildKey.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)", [:]).status == .ok)
            #expect(try await harness.manageReply(.delete, "pins?domainName=*.example.com&key=\(wildKey.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)", [:]).errorCode == "pin_not_found")
            let soon = Int(Date().timeIntervalSince1970) + 2
            #expect(try await harness.manageReply(.post, "pins", ["domainName": "soon.example.com", "key": wildKey, "expire": soon]).status == .ok)
            try await eventually("the new pin is served, the removed one is not") {
                let domains = try Self.pythonVerifies(try await registry(harness).2, signingKeyBase64: secondKey)
                return domains == ["api.example.com", "soon.example.com"]
            }
            // Every change moved the registry's sequence forward: an app that held the first refuses it now.
            let laterSequence = try #require(
                try PinRegistry.verifiedRegistry(try await registry(harness).2, signingKey: PinRegistry.signingKey(secondKey)).sequence)
            #expect(laterSequence > firstSequence)
            try await eventually(timeout: .seconds(10), "the expired pin is left out") {
                try Self.pythonVerifies(try await registry(harness).2, signingKeyBase64: secondKey) == ["api.example.com"]
            }
            let audit = try await harness.manage(.get, "audit?limit=100", [:])
            let actions = Set((audit["entries"] as? [[String: Any]] ?? []).compactMap { $0["action"] as? String })
            #expect(actions.isSuperset(of: ["pin.add", "pin.remove", "pin.rotate_signing_key"]))

            // Rotations racing preparations: one active key always, the one the rotation audited;
            // keys retired before the last rotation are deleted, private parts and all.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<4 {
                    group.addTask {
                        _ = try await harness.manageReply(.post, index.isMultiple(of: 2) ? "pins/prepare-signing-key" : "pins/rotate-signing-key", [:])
                    }
                }
                try await group.waitForAll()
            }
            _ = try await harness.manageReply(.post, "pins/rotate-signing-key", [:])
            var states: [String: Int] = [:]
            for try await (state, count) in try await harness.database.query(
                "SELECT state, count(*)::int FROM pin_signing_keys GROUP BY state"
            ).decode((String, Int).self) { states[state] = count }
            #expect(states["active"] == 1 && states["retired"] == 1 && (states["pending"] ?? 0) == 0, "\(states)")
            var active: UUID?
            for try await keyID in try await harness.database.query(
                "SELECT key_id FROM pin_signing_keys WHERE state = 'active'"
            ).decode(UUID.self) { active = keyID }
            let latest = try await harness.manage(.get, "audit?limit=500", [:])
            let rotations = (latest["entries"] as? [[String: Any]] ?? []).filter { $0["action"] as? String == "pin.rotate_signing_key" }
            let lastRotated = (rotations.last?["details"] as? [String: Any])?["keyId"] as? String
            #expect(lastRotated == active?.uuidString.lowercased(), "\(rotations)")
        }
    }
}
