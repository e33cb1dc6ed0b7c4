import AppAttest
import AppAttestTesting
import AuthService
import BenchmarkSupport
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import PostgresNIO
import SesameConfiguration
import SesameDomain
import SesameEncryption
import SesameServer
import SesameStorage
import SesameTestSupport
import SesameTokens
import SwiftASN1

// Measures sesame-auth over HTTP with wrk on this machine, against the PostgreSQL and broker that
// `./sesame-dev bench auth` started: attest (software attester, P-256 chain), bare refresh,
// assertion-bound refresh, and what an app's backend asks with a backend key: consuming a
// single-use token and checking an assertion. Every request is a distinct, valid one (a challenge or a refresh token is
// single use), so the figures are for successful work, and a non-200 reply is reported.
//
// The per-app admission limit is lifted (`SESAME_ATTEST_ADMISSION_RATE`), otherwise it is what is
// measured; clients come from distinct addresses behind a trusted gateway, as through nginx.

let attestCount = Int(ProcessInfo.processInfo.environment["SESAME_BENCH_ATTESTATIONS"] ?? "") ?? 20_000
let teamID = "BENCHTEAM1"
let bareApp = (bundleID: "com.example.bench", policy: AppPolicy(refreshRequiresAssertion: false))
let assertingApp = (bundleID: "com.example.bench.asserting", policy: AppPolicy(refreshRequiresAssertion: true))
let work = FileManager.default.temporaryDirectory.appendingPathComponent("sesame-auth-benchmark-\(getpid())")
let logger: Logger = {
    var logger = Logger(label: "auth-benchmark")
    logger.logLevel = .warning
    return logger
}()

func appID(_ bundleID: String) -> String { "\(teamID).\(bundleID)" }

/// Stores challenges as `POST /v1/auth/challenge` would, in bulk, and returns their nonces.
func issueChallenges(_ count: Int, on client: PostgresClient) async throws -> [[UInt8]] {
    let nonces = (0..<count).map { _ in (0..<32).map { _ in UInt8.random(in: 0...255) } }
    try await client.withTransaction(logger: logger) { connection in
        for batch in stride(from: 0, to: count, by: 1000) {
            let hashes = nonces[batch..<min(batch + 1000, count)].map { ByteBuffer(bytes: SHA256.hash(data: $0)) }
            try await connection.query(
                """
                INSERT INTO challenges (nonce_hash, purpose, expires_at)
                SELECT unnest(\(hashes)::bytea[]), 'app', now() + interval '30 minutes'
                """, logger: logger)
        }
    }
    return nonces
}

func jsonLine(_ object: [String: String]) throws -> String {
    String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
}

func write(_ lines: [String], to name: String) throws -> String {
    let path = work.appendingPathComponent(name).path
    try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    return path
}

/// The refresh tokens wrk captured (one file per thread).
func capturedTokens(_ prefix: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: work.path).filter { $0.hasPrefix(prefix + ".") }.flatMap {
        try String(contentsOfFile: work.appendingPathComponent($0).path, encoding: .utf8).split(separator: "\n").map(String.init)
    }
}

/// The `sub` claim of a JWT (the attested key id, base64url), read without verifying.
func subject(of token: String) -> String? {
    let parts = token.split(separator: ".")
    guard parts.count == 3, let payload = Base64.decode(String(parts[1])),
        let claims = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any]
    else { return nil }
    return claims["sub"] as? String
}

/// Sends each of `bodies` once to `path` with wrk and prints the figures, with the CPU time this
/// process (the auth service) and PostgreSQL spent meanwhile.
func measure(_ name: String, base: String, path: String, bodies: [String], capture: String? = nil, bearer: String? = nil) throws {
    let file = try write(bodies, to: "\(name.replacingOccurrences(of: " ", with: "-")).jsonl")
    let before = (auth: CPUTime.ofProcess("self"), database: CPUTime.ofPostgres())
    let (figures, raw) = try WrkRun(url: base + path, bodiesPath: file, capturePath: capture, bearer: bearer, count: bodies.count).run()
    let authSeconds = CPUTime.ofProcess("self") - before.auth
    let databaseSeconds = CPUTime.ofPostgres() - before.database
    FileHandle.standardError.write(Data(raw.utf8))
    let others = figures.statuses.filter { $0.key != 200 }.map { "\($0.value)×\($0.key)" }.joined(separator: ", ")
    let ok = figures.statuses[200] ?? 0
    print(
        String(
            format: "auth %@: %.0f req/s, p50 %@, p99 %@ (%d OK%@); CPU per request: auth %.2f ms, PostgreSQL %.2f ms", name,
            figures.scriptedRepliesPerSecond ?? figures.requestsPerSecond, figures.p50, figures.p99, ok, others.isEmpty ? "" : "; other replies: \(others)",
            authSeconds * 1000 / Double(max(ok, 1)), databaseSeconds * 1000 / Double(max(ok, 1))))
}

@main
enum AuthBenchmark {
    static func main() async throws {
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        try await benchmark()
    }

    /// The live auth service on a fresh database, with the three runs against it.
    nonisolated static func benchmark() async throws {
        let attester = try SoftwareAttester()
        let masterKey = (0..<32).map { _ in UInt8.random(in: 0...255) }
        try await TestDatabase.withFreshDatabase { url in
            let configuration = ServiceConfiguration(
                databaseURL: url.connectionString, kafkaBrokers: try TestKafka.brokers(), kafkaIdempotence: false,
                masterKey: MasterKeyMaterial(current: masterKey), port: 0, logLevel: .warning,
                appAttestExtraRootsPEM: try attester.rootCertificate.serializeAsPEM().pemString,
                trustedProxies: [IPAddressRange("127.0.0.1")!], attestAdmissionRate: 1_000_000)
            let app = try AuthService.buildApplication(configuration: configuration, logger: logger)
            let minting = Database(url: url, logger: logger)
            try await app.test(.live) { client in
                guard let port = client.port else { throw BenchmarkError("the live test server has no port") }
                try await eventually(timeout: .seconds(60), "auth ready") {
                    try await client.execute(uri: "/health/ready", method: .get) { $0.status == .ok }
                }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await minting.run() }
                    defer { group.cancelAll() }
                    // The benchmark mints single-use tokens as auth does, with auth's signing keys.
                    let tokens = TokenAuthority(
                        store: SigningKeyStore(
                            database: minting, encryption: EnvelopeEncryption(keyring: try MasterKeyring(current: masterKey)), logger: logger),
                        signs: true, logger: logger)
                    try await TestDatabase.withClient(url) { database in
                        try await run(port: port, attester: attester, database: database, tokens: tokens)
                    }
                }
            }
        }
    }

    static func run(port: Int, attester: SoftwareAttester, database: PostgresClient, tokens: TokenAuthority) async throws {
        for app in [bareApp, assertingApp] {
            let policy = String(decoding: try JSONEncoder().encode(app.policy), as: UTF8.self)
            let storageID = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
            try await database.query(
                """
                INSERT INTO apps (app_id, team_id, bundle_id, storage_id, policy)
                VALUES (\(appID(app.bundleID)), \(teamID), \(app.bundleID), \(storageID), \(policy)::jsonb)
                """)
        }
        let base = "http://127.0.0.1:\(port)"

        // Attest: half the keys for each app, interleaved.
        let nonces = try await issueChallenges(attestCount, on: database)
        var keys: [String: SoftwareAttester.DeviceKey] = [:]
        var bodies: [String] = []
        for (index, nonce) in nonces.enumerated() {
            let key = attester.generateKey()
            let bundleID = index % 2 == 0 ? bareApp.bundleID : assertingApp.bundleID
            if bundleID == assertingApp.bundleID { keys[Base64.urlEncode(key.keyId)] = key }
            let attestation = try attester.attest(key, clientDataHash: Array(SHA256.hash(data: nonce)), appId: appID(bundleID))
            bodies.append(
                try jsonLine([
                    "attestationObject": Data(attestation).base64EncodedString(), "keyId": Data(key.keyId).base64EncodedString(),
                    "nonce": Data(nonce).base64EncodedString(), "teamId": teamID, "bundleId": bundleID,
                ]))
        }
        try measure("attest", base: base, path: "/v1/auth/attest", bodies: bodies, capture: work.appendingPathComponent("tokens").path)

        // Refresh: every captured token once; the asserting app's with a fresh challenge and assertion.
        var bare: [String] = []
        var asserting: [(token: String, key: SoftwareAttester.DeviceKey)] = []
        for token in try capturedTokens("tokens") {
            if let sub = subject(of: token), let key = keys[sub] { asserting.append((token, key)) } else { bare.append(token) }
        }
        try measure("refresh", base: base, path: "/v1/auth/refresh", bodies: try bare.map { try jsonLine(["refreshToken": $0]) })

        let assertionNonces = try await issueChallenges(asserting.count, on: database)
        var assertionBodies: [String] = []
        for ((token, key), nonce) in zip(asserting, assertionNonces) {
            let clientData = try JSONSerialization.data(withJSONObject: ["challenge": Data(nonce).base64EncodedString()])
            let assertion = try attester.assert(
                key, clientDataHash: Array(SHA256.hash(data: clientData)), appId: appID(assertingApp.bundleID), counter: 1)
            assertionBodies.append(
                try jsonLine([
                    "refreshToken": token, "assertion": Data(assertion).base64EncodedString(), "clientData": clientData.base64EncodedString(),
                ]))
        }
        try measure("refresh with assertion", base: base, path: "/v1/auth/refresh", bodies: assertionBodies)

        // What the app's backend asks, with a backend key: a single-use token consumed, once per
        // bare install; an assertion over an action checked, once per asserting install.
        var consumeBodies: [String] = []
        for token in bare {
            guard let sub = subject(of: token) else { continue }
            let access = try await tokens.issueAccessToken(
                for: TokenAuthority.Subject(keyID: sub, appID: appID(bareApp.bundleID), environment: "development", appVersion: "1.0"))
            let single = try await tokens.issueAPIToken(
                for: access.claims, audience: "https://api.example.com", binding: nil, limitedUse: true, lifetime: .seconds(600))
            consumeBodies.append(try jsonLine(["token": single.token]))
        }
        let bareBackend = try await backendKey(for: appID(bareApp.bundleID), on: database)
        try measure("consume", base: base, path: "/v1/verify/consume", bodies: consumeBodies, bearer: bareBackend)

        let action = Data(#"{"action":"purchase","sku":"gold"}"#.utf8)
        let verifyBodies = try asserting.map { _, key in
            let assertion = try attester.assert(key, clientDataHash: Array(SHA256.hash(data: action)), appId: appID(assertingApp.bundleID), counter: 2)
            return try jsonLine([
                "keyId": Data(key.keyId).base64EncodedString(), "clientData": action.base64EncodedString(),
                "assertion": Data(assertion).base64EncodedString(),
            ])
        }
        let assertingBackend = try await backendKey(for: appID(assertingApp.bundleID), on: database)
        try measure("assertion verify", base: base, path: "/v1/verify/assertion", bodies: verifyBodies, bearer: assertingBackend)
    }

    /// A backend key of `appID`, stored as admin stores one.
    static func backendKey(for appID: String, on database: PostgresClient) async throws -> String {
        let key = BearerSecret.generate(prefix: BackendKeyStore.prefix)
        try await database.query(
            """
            INSERT INTO backend_keys (key_id, app_id, name, key_hash, key_hint)
            VALUES (\(UUID()), \(appID), 'benchmark', \(BearerSecret.hash(key)), 'bk_prod_…')
            """)
        return key
    }
}
