import AppAttest
import AppAttestTesting
import AuthService
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOFoundationEssentialsCompat
import PostgresNIO
import SesameConfiguration
import SesameDomain
import SesameEncryption
import SesameServer
import SesameTokens
import Logging
import SesameStorage
import SesameTestSupport
import SwiftASN1
import Testing

/// A live auth service on a fresh database with one registered app, a software attester it trusts
/// (as `SESAME_APP_ATTEST_EXTRA_ROOTS` would configure), and helpers that play the app's part.
struct AuthHarness: Sendable {
    static let teamID = "TEAMID1234"
    static let bundleID = "com.example.app"
    static let appID = "\(teamID).\(bundleID)"

    let client: any TestClientProtocol
    let database: PostgresClient
    let databaseURL: DatabaseURL
    let attester: SoftwareAttester
    let configuration: ServiceConfiguration
    static let masterKey = Array(repeating: UInt8(7), count: 32)

    struct Reply: @unchecked Sendable {
        let status: HTTPResponse.Status
        let headers: HTTPFields
        let json: [String: Any]
        var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
        subscript(key: String) -> String? { json[key] as? String }
    }

    static func run(
        policy: AppPolicy = AppPolicy(refreshRequiresAssertion: false), admissionRate: Int = 50, connections: TestConnections = .one,
        appleURL: String? = nil, receipts: SoftwareReceiptAuthority? = nil, _ body: @Sendable (AuthHarness) async throws -> Void
    ) async throws {
        let attester = try SoftwareAttester(receipts: receipts)
        // The receipt authority's root is trusted as the attester's is, as SESAME_APP_ATTEST_EXTRA_ROOTS would.
        let extraRoots = try [attester.rootCertificate.serializeAsPEM().pemString] + (receipts.map { [try $0.rootCertificatePEM] } ?? [])
        try await TestDatabase.withFreshDatabase { url in
            let configuration = ServiceConfiguration(
                databaseURL: url.connectionString, kafkaBrokers: try TestKafka.brokers(), kafkaIdempotence: false,
                masterKey: MasterKeyMaterial(current: masterKey), port: 0,
                appAttestExtraRootsPEM: extraRoots.joined(separator: "\n"),
                // The test client is the gateway: `post(from:)` says which client it forwards for.
                trustedProxies: [IPAddressRange("127.0.0.1")!, IPAddressRange("::1")!], attestAdmissionRate: admissionRate,
                // A fake Apple on 127.0.0.1 serves both of DeviceCheck's servers.
                appleDeviceCheckURL: appleURL ?? ServiceConfiguration.defaultAppleDeviceCheckURL,
                appleDeviceCheckDevelopmentURL: appleURL ?? ServiceConfiguration.defaultAppleDeviceCheckDevelopmentURL,
                appleAppAttestDataURL: appleURL ?? ServiceConfiguration.defaultAppleAppAttestDataURL,
                appleAppAttestDataDevelopmentURL: appleURL ?? ServiceConfiguration.defaultAppleAppAttestDataDevelopmentURL,
                receiptRedemptionInterval: .milliseconds(200), attestationRoundInterval: .milliseconds(200))
            let app = try AuthService.buildApplication(configuration: configuration)
            try await app.test(connections.setup) { client in
                try await eventually("auth ready") {
                    try await client.execute(uri: "/health/ready", method: .get) { $0.status == .ok }
                }
                try await TestDatabase.withClient(url) { database in
                    let policyJSON = try policy.storedJSON()
                    let storageID = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
                    try await database.query(
                        """
                        INSERT INTO apps (app_id, team_id, bundle_id, storage_id, policy)
                        VALUES (\(appID), \(teamID), \(bundleID), \(storageID), \(policyJSON)::jsonb)
                        """)
                    try await body(
                        AuthHarness(client: client, database: database, databaseURL: url, attester: attester, configuration: configuration))
                }
            }
        }
    }

    /// Runs `body` with a harness for a second auth instance on the same database: a replica.
    func withSecondReplica(_ body: @Sendable (AuthHarness) async throws -> Void) async throws {
        try await AuthService.buildApplication(configuration: configuration).test(.live) { client in
            try await eventually("second auth ready") {
                try await client.execute(uri: "/health/ready", method: .get) { $0.status == .ok }
            }
            try await body(AuthHarness(client: client, database: database, databaseURL: databaseURL, attester: attester, configuration: configuration))
        }
    }

    /// Replaces the app's policy, as the management API does.
    func setPolicy(_ policy: AppPolicy) async throws {
        let policyJSON = try policy.storedJSON()
        try await database.query("UPDATE apps SET policy = \(policyJSON)::jsonb WHERE app_id = \(Self.appID)")
    }

    /// Runs `body` with a pool of the test's own on the service's database.
    func withDatabase(_ body: (Database) async throws -> Void) async throws {
        let pool = Database(url: databaseURL, logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await pool.run() }
            defer { group.cancelAll() }
            try await body(pool)
        }
    }

    /// The service's signing key store, on a pool of the test's own.
    func withTokenStore(_ body: (SigningKeyStore) async throws -> Void) async throws {
        try await withDatabase { pool in
            let encryption = EnvelopeEncryption(keyring: try MasterKeyring(current: Self.masterKey))
            try await body(SigningKeyStore(database: pool, encryption: encryption, logger: Logger(label: "test")))
        }
    }

    /// Runs `body` with the backend key store, on a pool of the test's own (admin makes these keys).
    func withBackendKeys(_ body: (BackendKeyStore) async throws -> Void) async throws {
        try await withDatabase { pool in try await body(BackendKeyStore(database: pool, logger: Logger(label: "test"))) }
    }

    /// Runs `body` with the consumed-token store, on a pool of the test's own.
    func withConsumedTokens(_ body: (ConsumedAPITokens) async throws -> Void) async throws {
        try await withDatabase { pool in try await body(ConsumedAPITokens(database: pool, logger: Logger(label: "test"))) }
    }

    /// A new live backend key of the app (or of `appID`).
    /// A new backend key of `appID`, bound to `audience` when given.
    func backendKey(appID: String = Self.appID, audience: String? = nil) async throws -> String {
        var made: String?
        try await withBackendKeys { store in
            made = try await store.create(appID: appID, name: "test-backend", audience: audience, actor: "operator").key
        }
        return try #require(made, "no app \(appID) to make a backend key for")
    }

    func post(_ path: String, _ json: [String: Any], from clientAddress: String? = nil, bearer: String? = nil) async throws -> Reply {
        try await post(path, body: JSONSerialization.data(withJSONObject: json), from: clientAddress, bearer: bearer)
    }

    /// POSTs `body`; `clientAddress` arrives as the gateway would forward it, `bearer` as the
    /// `Authorization` credential.
    func post(_ path: String, body: Data, from clientAddress: String? = nil, bearer: String? = nil) async throws -> Reply {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let clientAddress { headers[.init("X-Forwarded-For")!] = "203.0.113.9, \(clientAddress)" }
        if let bearer { headers[.authorization] = "Bearer \(bearer)" }
        return try await client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(bytes: body)) { response in
            let json = (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any] ?? [:]
            return Reply(status: response.status, headers: response.headers, json: json)
        }
    }

    func get(_ path: String) async throws -> (HTTPResponse.Status, Data) {
        try await client.execute(uri: path, method: .get) { ($0.status, Data(buffer: $0.body)) }
    }

    /// A nonce from `POST /v1/auth/challenge`.
    func challenge() async throws -> [UInt8] {
        let reply = try await post("/v1/auth/challenge", [:])
        #expect(reply.status == .ok)
        return try #require(reply["nonce"].flatMap(Base64.decode))
    }

    /// The attest body the app sends for `key` over `nonce` (the attestation is made as `recipe` says).
    func attestBody(
        _ key: SoftwareAttester.DeviceKey, nonce: [UInt8], environment: AppAttestEnvironment = .development,
        appVersion: String? = nil, adjust: (inout SoftwareAttester.Recipe) -> Void = { _ in }
    ) throws -> [String: Any] {
        var recipe = attester.recipe(
            for: key, clientDataHash: Array(SHA256.hash(data: nonce)), appId: Self.appID, environment: environment)
        adjust(&recipe)
        var body: [String: Any] = [
            "attestationObject": Data(try attester.attestation(from: recipe)).base64EncodedString(),
            "keyId": Data(key.keyId).base64EncodedString(), "nonce": Data(nonce).base64EncodedString(),
            "teamId": Self.teamID, "bundleId": Self.bundleID,
        ]
        if let appVersion { body["appVersion"] = appVersion }
        return body
    }

    /// Attests a new key and returns it with the token reply.
    func attestNewKey(environment: AppAttestEnvironment = .development, appVersion: String? = nil, deviceToken: String? = nil) async throws -> (
        SoftwareAttester.DeviceKey, Reply
    ) {
        let key = attester.generateKey()
        var body = try attestBody(key, nonce: try await challenge(), environment: environment, appVersion: appVersion)
        if let deviceToken { body["deviceToken"] = deviceToken }
        let reply = try await post("/v1/auth/attest", body)
        return (key, reply)
    }

    /// `assertion` and `clientData` for a refresh: client data carrying a fresh challenge, signed with `counter`.
    func assertionFields(_ key: SoftwareAttester.DeviceKey, counter: UInt32) async throws -> [String: Any] {
        let clientData = try JSONSerialization.data(withJSONObject: ["challenge": Data(try await challenge()).base64EncodedString()])
        let assertion = try attester.assert(
            key, clientDataHash: Array(SHA256.hash(data: clientData)), appId: Self.appID, counter: counter)
        return ["assertion": Data(assertion).base64EncodedString(), "clientData": clientData.base64EncodedString()]
    }

    func refresh(_ refreshToken: String, extra: [String: Any] = [:], from clientAddress: String? = nil) async throws -> Reply {
        try await post("/v1/auth/refresh", extra.merging(["refreshToken": refreshToken]) { $1 }, from: clientAddress)
    }
}
