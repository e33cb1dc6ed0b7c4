import AdminService
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOFoundationEssentialsCompat
import PostgresNIO
import SesameConfiguration
import SesameServer
import SesameStorage
import SesameTestSupport
import Testing

/// A live admin service on a fresh database, with an operator token, and helpers that play the CLI.
struct AdminHarness: Sendable {
    static let operatorToken = "operator-token-for-tests-0123456789abcdef"
    static let masterKey = Array(repeating: UInt8(9), count: 32)
    static let teamID = "TEAMID1234"
    static let bundleID = "com.example.app"
    static let appID = "\(teamID).\(bundleID)"

    let client: any TestClientProtocol
    let database: PostgresClient

    struct Reply: @unchecked Sendable {
        let status: HTTPResponse.Status
        let json: [String: Any]
        let body: Data
        var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
        var errorMessage: String? { (json["error"] as? [String: Any])?["message"] as? String }
        subscript(key: String) -> Any? { json[key] }
    }

    static func run(
        maxConfigBytes: Int = 1 << 20, maxBodyBytes: Int = 1 << 20, maxBlobBytes: Int = 50 << 20, connections: TestConnections = .one,
        outboundAllowances: String = "", appleDeviceCheckURL: String = ServiceConfiguration.defaultAppleDeviceCheckURL,
        _ body: @Sendable (AdminHarness) async throws -> Void) async throws {
        try await TestDatabase.withFreshDatabase { url in
            let configuration = ServiceConfiguration(
                databaseURL: url.connectionString, kafkaBrokers: try TestKafka.brokers(), kafkaIdempotence: false,
                masterKey: MasterKeyMaterial(current: masterKey), port: 0, maxBodyBytes: maxBodyBytes,
                operatorToken: operatorToken, maxConfigBytes: maxConfigBytes, maxBlobBytes: maxBlobBytes,
                outboundAllowances: try OutboundAllowance.parseList(outboundAllowances), appleDeviceCheckURL: appleDeviceCheckURL,
                // One fake Apple serves both of DeviceCheck's servers.
                appleDeviceCheckDevelopmentURL: appleDeviceCheckURL == ServiceConfiguration.defaultAppleDeviceCheckURL
                    ? ServiceConfiguration.defaultAppleDeviceCheckDevelopmentURL : appleDeviceCheckURL)
            let app = try AdminService.buildApplication(configuration: configuration)
            try await app.test(connections.setup) { client in
                try await eventually("admin ready") {
                    try await client.execute(uri: "/health/ready", method: .get) { $0.status == .ok }
                }
                try await TestDatabase.withClient(url) { database in
                    try await body(AdminHarness(client: client, database: database))
                }
            }
        }
    }

    /// A request with `credential` as bearer token (none when nil) and `json` as body.
    func call(_ method: HTTPRequest.Method, _ path: String, credential: String?, json: Any? = nil) async throws -> Reply {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let credential { headers[.authorization] = "Bearer \(credential)" }
        let body = try json.map { ByteBuffer(data: try JSONSerialization.data(withJSONObject: $0)) }
        return try await client.execute(uri: path, method: method, headers: headers, body: body) { response in
            let data = Data(buffer: response.body)
            return Reply(status: response.status, json: (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:], body: data)
        }
    }

    /// Registers `TEAMID.bundle` with the operator token and returns its first provisioning key.
    func createKey(teamID: String = teamID, bundleID: String = bundleID, name: String = "ci") async throws -> String {
        let reply = try await call(
            .post, "/v1/admin/keys/create", credential: Self.operatorToken, json: ["teamId": teamID, "bundleId": bundleID, "keyName": name])
        #expect(reply.status == .ok, "\(String(decoding: reply.body, as: UTF8.self))")
        return try #require(reply["key"] as? String)
    }

    /// PUTs raw `bytes` as a blob.
    func putBlob(_ key: String, bytes: [UInt8], contentType: String, credential: String) async throws -> Reply {
        let headers: HTTPFields = [.contentType: contentType, .authorization: "Bearer \(credential)"]
        return try await client.execute(uri: "/v1/admin/blob/\(key)", method: .put, headers: headers, body: ByteBuffer(bytes: bytes)) {
            let data = Data(buffer: $0.body)
            return Reply(status: $0.status, json: (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:], body: data)
        }
    }

    func upload(_ config: Any, version: String, key: String) async throws -> Reply {
        try await call(.post, "/v1/admin/config/upload", credential: key, json: ["version": version, "config": config])
    }
}
