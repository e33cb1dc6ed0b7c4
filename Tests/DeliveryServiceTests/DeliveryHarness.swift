import AdminService
import AppAttestTesting
import AuthService
import DeliveryService
import Foundation
import Hummingbird
import Logging
import HummingbirdTesting
import NIOFoundationEssentialsCompat
import PostgresNIO
import SesameConfiguration
import SesameEncryption
import SesameHTTP
import SesameServer
import SesameStorage
import SesameTestSupport
import SesameTokens
import SwiftASN1
import Testing

/// The whole suite on one fresh database and the test broker: admin (with its outbox relay), auth
/// trusting a software attester, and two delivery instances.
struct DeliveryHarness: Sendable {
    static let operatorToken = "delivery-test-operator-token-0123456789"
    static let teamID = "TEAMID1234"
    static let bundleID = "com.example.app"
    static var appID: String { "\(teamID).\(bundleID)" }

    let admin: any TestClientProtocol
    let auth: any TestClientProtocol
    let deliveries: [any TestClientProtocol]
    let database: PostgresClient
    let app: SoftwareApp
    let key: String
    /// What every service here runs with, to start another instance.
    let configuration: ServiceConfiguration

    struct Reply: @unchecked Sendable {
        let status: HTTPResponse.Status
        let headers: HTTPFields
        let json: [String: Any]
        var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
        var errorMessage: String? { (json["error"] as? [String: Any])?["message"] as? String }
        var config: [String: Any]? { json["config"] as? [String: Any] }

        init(status: HTTPResponse.Status, headers: HTTPFields, json: [String: Any]) {
            self.status = status
            self.headers = headers
            self.json = json
        }

        /// A test client's response, its body read as a JSON object (empty when it is none).
        init(_ response: TestResponse) {
            self.init(
                status: response.status, headers: response.headers,
                json: (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any] ?? [:])
        }
    }

    /// - Parameters:
    ///   - kafkaBrokers: a private broker the test may stop; the shared test broker by default.
    ///   - resyncInterval: delivery's full reload from PostgreSQL; long, to prove the event path.
    ///   - extraRootsPEM: another attestation root auth trusts besides the harness's attester (SesameKit's).
    ///   - connections: how the test reaches the delivery instances (`.many` for races).
    ///   - deliveryAllowances: delivery's `SESAME_OUTBOUND_ALLOWED_HOSTS` when it differs from admin's
    ///     (an operator narrowed it after relays were set).
    static func run(
        kafkaBrokers: [String]? = nil, resyncInterval: Duration = .seconds(30), extraRootsPEM: String? = nil,
        connections: TestConnections = .one, deliveryAllowances: String? = nil,
        _ body: @Sendable (DeliveryHarness) async throws -> Void
    ) async throws {
        let attester = try SoftwareAttester()
        try await TestDatabase.withFreshDatabase { url in
            let configuration = ServiceConfiguration(
                databaseURL: url.connectionString, kafkaBrokers: try kafkaBrokers ?? TestKafka.brokers(), kafkaIdempotence: false,
                masterKey: MasterKeyMaterial(current: Array(repeating: 5, count: 32)), port: 0,
                appAttestExtraRootsPEM: try attester.rootCertificate.serializeAsPEM().pemString + "\n" + (extraRootsPEM ?? ""),
                operatorToken: operatorToken,
                deliveryResyncInterval: resyncInterval,
                // The tests' identity issuers serve their JWKS, and relay upstreams answer, on this
                // address (an internal provider): opened to every app's calls of those two kinds.
                outboundAllowances: try OutboundAllowance.parseList("jwks+relay=127.0.0.1:*@*"))
            var narrowed = configuration
            if let deliveryAllowances { narrowed.outboundAllowances = try OutboundAllowance.parseList(deliveryAllowances) }
            let deliveryConfiguration = narrowed
            try await AdminService.buildApplication(configuration: configuration).test(.live) { admin in
                try await ready(admin)
                try await AuthService.buildApplication(configuration: configuration).test(.live) { auth in
                    try await ready(auth)
                    try await DeliveryService.buildApplication(configuration: deliveryConfiguration).test(connections.setup) { first in
                        try await DeliveryService.buildApplication(configuration: deliveryConfiguration).test(connections.setup) { second in
                            try await ready(first)
                            try await ready(second)
                            let key = try await provisioningKey(admin: admin, bundleID: bundleID)
                            try await TestDatabase.withClient(url) { database in
                                try await body(
                                    DeliveryHarness(
                                        admin: admin, auth: auth, deliveries: [first, second], database: database,
                                        app: SoftwareApp(attester: attester, teamID: teamID, bundleID: bundleID), key: key,
                                        configuration: configuration))
                            }
                        }
                    }
                }
            }
        }
    }

    static func ready(_ client: any TestClientProtocol) async throws {
        try await eventually(timeout: .seconds(60), "service ready") {
            try await client.execute(uri: "/health/ready", method: .get) { $0.status == .ok }
        }
    }

    /// A management call with the app's provisioning key (or another app's, `key`).
    @discardableResult
    func manage(_ method: HTTPRequest.Method, _ path: String, _ json: [String: Any], key: String? = nil) async throws -> [String: Any] {
        try await admin.execute(
            uri: "/v1/admin/\(path)", method: method,
            headers: [.authorization: "Bearer \(key ?? self.key)", .contentType: "application/json"],
            body: ByteBuffer(data: try JSONSerialization.data(withJSONObject: json))
        ) { try JSONSerialization.jsonObject(with: Data(buffer: $0.body)) as? [String: Any] ?? [:] }
    }

    func upload(_ config: Any, version: String) async throws -> Int {
        try #require(try await manage(.post, "config/upload", ["version": version, "config": config])["revision"] as? Int)
    }

    /// `GET /v1/config` from delivery instance `instance`.
    func fetch(
        version: String, token: String?, scope: String? = nil, ifNoneMatch: String? = nil, instance: Int = 0
    ) async throws -> Reply {
        var uri = "/v1/config?version=\(version)"
        if let scope { uri += "&scope=\(scope)" }
        var headers: HTTPFields = [:]
        if let token { headers[.authorization] = "Bearer \(token)" }
        if let ifNoneMatch { headers[.ifNoneMatch] = ifNoneMatch }
        return try await deliveries[instance].execute(uri: uri, method: .get, headers: headers) { Reply($0) }
    }

    /// A request to `/v1/user/data` on delivery instance `instance`, naming the user in `X-Sesame-User-Id`
    /// (`userID`) or proving it with an ID token (`identityToken`).
    func userData(
        _ method: HTTPRequest.Method, userID: String? = nil, identityToken: String? = nil, token: String, body: String? = nil,
        ifMatch: String? = nil, query: String = "", instance: Int = 0
    ) async throws -> (status: HTTPResponse.Status, etag: String?, body: String) {
        var headers: HTTPFields = [.authorization: "Bearer \(token)", .contentType: "application/json"]
        if let ifMatch { headers[.ifMatch] = ifMatch }
        if let userID { headers[SesameHeaders.userID] = userID }
        if let identityToken { headers[SesameHeaders.identityToken] = identityToken }
        return try await deliveries[instance].execute(
            uri: "/v1/user/data\(query)", method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }
        ) { ($0.status, $0.headers[.eTag], String(buffer: $0.body)) }
    }

    /// Replaces the app's policy through the management API and waits until every delivery
    /// instance has it (`probe` passes on each).
    func setPolicy(_ policy: [String: Any], until probe: @Sendable (Int) async throws -> Bool) async throws {
        let reply = try await admin.execute(
            uri: "/v1/admin/policy", method: .put, headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
            body: ByteBuffer(data: try JSONSerialization.data(withJSONObject: policy))
        ) { ($0.status, String(buffer: $0.body)) }
        #expect(reply.0 == .ok, "\(reply.1)")
        for instance in deliveries.indices {
            try await eventually("delivery \(instance) applies the policy") { try await probe(instance) }
        }
    }

    /// `GET /v1/blob/{key}` on delivery instance `instance`: the link, or the refusal.
    func blobLink(_ blobKey: String, token: String, instance: Int = 0) async throws -> Reply {
        try await get("/v1/blob/\(blobKey)", token: token, instance: instance)
    }

    /// A GET on delivery instance `instance`, with the access token when given.
    func get(_ uri: String, token: String? = nil, instance: Int = 0) async throws -> Reply {
        var headers: HTTPFields = [:]
        if let token { headers[.authorization] = "Bearer \(token)" }
        return try await deliveries[instance].execute(uri: uri, method: .get, headers: headers) { Reply($0) }
    }

    /// `GET /metrics` of delivery instance `instance`, as text (every instance of this process
    /// shares one registry).
    func metrics(instance: Int = 0) async throws -> String {
        try await deliveries[instance].execute(uri: "/metrics", method: .get) { String(buffer: $0.body) }
    }

    /// The readiness status (`ready`, `degraded`, `unavailable`) of delivery instance `instance`.
    func readiness(instance: Int) async throws -> String? {
        try await readinessBody(of: deliveries[instance])["status"] as? String
    }

    /// The whole readiness answer of `client`.
    func readinessBody(of client: any TestClientProtocol) async throws -> [String: Any] {
        try await client.execute(uri: "/health/ready", method: .get) { response in
            try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any] ?? [:]
        }
    }

    /// Creates another app through the operator API; its provisioning key and a software app for it.
    func createApp(bundleID: String) async throws -> (key: String, app: SoftwareApp) {
        (try await Self.provisioningKey(admin: admin, bundleID: bundleID), SoftwareApp(attester: app.attester, teamID: Self.teamID, bundleID: bundleID))
    }

    /// Creates the app `teamID`.`bundleID` through the operator API; its provisioning key.
    static func provisioningKey(admin: any TestClientProtocol, bundleID: String) async throws -> String {
        let created = try await admin.execute(
            uri: "/v1/admin/keys/create", method: .post,
            headers: [.authorization: "Bearer \(operatorToken)", .contentType: "application/json"],
            body: ByteBuffer(string: #"{"teamId":"\#(teamID)","bundleId":"\#(bundleID)"}"#)
        ) { try JSONSerialization.jsonObject(with: Data(buffer: $0.body)) as? [String: Any] }
        return try #require(created?["key"] as? String)
    }

    /// The signing keys in this suite's database, as auth's operator command reaches them: the
    /// store and a signing authority of its own (separate from the running auth's memory).
    func withSigningKeys(_ body: (SigningKeyStore, TokenAuthority) async throws -> Void) async throws {
        let pool = Database(url: try DatabaseURL(configuration.databaseURL), logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await pool.run() }
            defer { group.cancelAll() }
            let keyring = try MasterKeyring(current: configuration.masterKey.current)
            let store = SigningKeyStore(database: pool, encryption: EnvelopeEncryption(keyring: keyring), logger: Logger(label: "test"))
            try await body(store, TokenAuthority(store: store, signs: true, logger: Logger(label: "test")))
        }
    }

    /// Waits until every delivery instance serves `revision` for `version`, from `pattern` when
    /// given: revisions count per pattern, so several patterns can be at the same one.
    func waitUntilServed(version: String, revision: Int, pattern: String? = nil, token: String, timeout: Duration = .seconds(10)) async throws {
        for instance in deliveries.indices {
            try await eventually(timeout: timeout, "delivery \(instance) serves revision \(revision)") {
                let served = try await fetch(version: version, token: token, instance: instance).json
                return served["revision"] as? Int == revision && (pattern == nil || served["matchedPattern"] as? String == pattern)
            }
        }
    }
}
