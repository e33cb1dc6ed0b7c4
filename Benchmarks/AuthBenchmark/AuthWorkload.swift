import AppAttestTesting
import BenchmarkSupport
import Crypto
import Foundation
import Logging
import PostgresNIO
import SesameDomain
import SesameEncryption
import SesameStorage
import SesameTestSupport
import SesameTokens

/// What one flow measured against one auth build.
struct FlowFigures {
    let flow: Flow
    let requestsPerSecond: Double
    let p50: String
    let p99: String
    let ok: Int
    /// Replies other than 200, as `count×status`.
    var others: String
    /// CPU per successful request, milliseconds.
    let authCPU: Double
    let databaseCPU: Double
}

/// The flows measured, with the signatures each makes and checks (for the crypto floor).
enum Flow: String, CaseIterable {
    case attest
    case refresh
    /// Refresh while one address floods `/v1/verify/consume` with an unknown backend key: what the
    /// failed-credential limiter leaves of an outsider's flood.
    case refreshUnderFlood = "refresh, one address flooding verify"
    case refreshWithAssertion = "refresh with assertion"
    case consume
    case assertionVerify = "assertion verify"

    /// P-256 signatures made and verified per request: attest checks the leaf's and the
    /// intermediate's certificate signatures and signs the access token; refresh signs the access
    /// token (its refresh tokens are HMACs, a microsecond each, left out); an assertion is one more
    /// verification; a backend's consume verifies the API token.
    var crypto: (signs: Int, verifies: Int) {
        switch self {
        case .attest: (1, 2)
        case .refresh, .refreshUnderFlood: (1, 0)
        case .refreshWithAssertion: (1, 1)
        case .consume: (0, 1)
        case .assertionVerify: (0, 1)
        }
    }
}

/// The five flows, each a wrk run of distinct valid requests, against one auth process on a fresh
/// database: attest (software attester, P-256 chain), bare refresh, assertion-bound refresh, and
/// what an app's backend asks with a backend key (consume a single-use token, check an assertion).
struct AuthWorkload {
    let auth: ServiceProcess
    let database: PostgresClient
    /// Mints single-use tokens with auth's own signing keys, as auth would.
    let tokens: TokenAuthority
    let attester: SoftwareAttester
    let work: URL
    let attestCount: Int
    let logger: Logger

    static let teamID = "BENCHTEAM1"
    static let bareApp = (bundleID: "com.example.bench", policy: AppPolicy(refreshRequiresAssertion: false))
    static let assertingApp = (bundleID: "com.example.bench.asserting", policy: AppPolicy(refreshRequiresAssertion: true))

    static func appID(_ bundleID: String) -> String { "\(teamID).\(bundleID)" }

    func run() async throws -> [FlowFigures] {
        var figures: [FlowFigures] = []
        for app in [Self.bareApp, Self.assertingApp] {
            let policy = String(decoding: try JSONEncoder().encode(app.policy), as: UTF8.self)
            let storageID = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
            try await database.query(
                """
                INSERT INTO apps (app_id, team_id, bundle_id, storage_id, policy)
                VALUES (\(Self.appID(app.bundleID)), \(Self.teamID), \(app.bundleID), \(storageID), \(policy)::jsonb)
                """)
        }

        // Attest: half the keys for each app, interleaved.
        let nonces = try await issueChallenges(attestCount)
        var keys: [String: SoftwareAttester.DeviceKey] = [:]
        var bodies: [String] = []
        for (index, nonce) in nonces.enumerated() {
            let key = attester.generateKey()
            let bundleID = index % 2 == 0 ? Self.bareApp.bundleID : Self.assertingApp.bundleID
            if bundleID == Self.assertingApp.bundleID { keys[Base64.urlEncode(key.keyId)] = key }
            let attestation = try attester.attest(key, clientDataHash: Array(SHA256.hash(data: nonce)), appId: Self.appID(bundleID))
            bodies.append(
                try jsonLine([
                    "attestationObject": Data(attestation).base64EncodedString(), "keyId": Data(key.keyId).base64EncodedString(),
                    "nonce": Data(nonce).base64EncodedString(), "teamId": Self.teamID, "bundleId": bundleID,
                ]))
        }
        let capture = work.appendingPathComponent("tokens").path
        figures.append(try measure(.attest, path: "/v1/auth/attest", bodies: bodies, capture: capture))

        // Refresh: every captured token once; the asserting app's with a fresh challenge and assertion.
        var bare: [String] = []
        var asserting: [(token: String, key: SoftwareAttester.DeviceKey)] = []
        for token in try capturedTokens("tokens") {
            if let sub = subject(of: token), let key = keys[sub] { asserting.append((token, key)) } else { bare.append(token) }
        }
        // Half alone, half while one address floods verification with an unknown backend key: the
        // two p99s side by side are the flood's cost (the limiter answers it 429 before any lookup).
        let refreshBodies = try bare.map { try jsonLine(["refreshToken": $0]) }
        let half = refreshBodies.count / 2
        figures.append(try measure(.refresh, path: "/v1/auth/refresh", bodies: Array(refreshBodies[..<half])))
        let flood = try WrkFlood(url: auth.baseURL + "/v1/verify/consume", address: "198.51.100.77", seconds: max(10, half / 250) + 5)
        var flooded = try measure(.refreshUnderFlood, path: "/v1/auth/refresh", bodies: Array(refreshBodies[half...]))
        let floodStatuses = flood.stop()
        flooded.others = ([flooded.others] + ["the flood: " + floodStatuses.sorted { $0.key < $1.key }.map { "\($0.value)×\($0.key)" }.joined(separator: ", ")])
            .filter { !$0.isEmpty }.joined(separator: "; ")
        figures.append(flooded)

        let assertionNonces = try await issueChallenges(asserting.count)
        var assertionBodies: [String] = []
        for ((token, key), nonce) in zip(asserting, assertionNonces) {
            let clientData = try JSONSerialization.data(withJSONObject: ["challenge": Data(nonce).base64EncodedString()])
            let assertion = try attester.assert(
                key, clientDataHash: Array(SHA256.hash(data: clientData)), appId: Self.appID(Self.assertingApp.bundleID), counter: 1)
            assertionBodies.append(
                try jsonLine([
                    "refreshToken": token, "assertion": Data(assertion).base64EncodedString(), "clientData": clientData.base64EncodedString(),
                ]))
        }
        figures.append(try measure(.refreshWithAssertion, path: "/v1/auth/refresh", bodies: assertionBodies))

        // What the app's backend asks, with a backend key: a single-use token consumed, once per
        // bare install; an assertion over an action checked, once per asserting install.
        var consumeBodies: [String] = []
        for token in bare {
            guard let sub = subject(of: token) else { continue }
            let access = try await tokens.issueAccessToken(
                for: TokenAuthority.Subject(keyID: sub, appID: Self.appID(Self.bareApp.bundleID), environment: "development", appVersion: "1.0"))
            let single = try await tokens.issueAPIToken(
                for: access.claims, audience: "https://api.example.com", binding: nil, limitedUse: true, lifetime: .seconds(600))
            consumeBodies.append(try jsonLine(["token": single.token]))
        }
        let bareBackend = try await backendKey(for: Self.appID(Self.bareApp.bundleID))
        figures.append(try measure(.consume, path: "/v1/verify/consume", bodies: consumeBodies, bearer: bareBackend))

        let action = Data(#"{"action":"purchase","sku":"gold"}"#.utf8)
        let verifyBodies = try asserting.map { _, key in
            let assertion = try attester.assert(
                key, clientDataHash: Array(SHA256.hash(data: action)), appId: Self.appID(Self.assertingApp.bundleID), counter: 2)
            return try jsonLine([
                "keyId": Data(key.keyId).base64EncodedString(), "clientData": action.base64EncodedString(),
                "assertion": Data(assertion).base64EncodedString(),
            ])
        }
        let assertingBackend = try await backendKey(for: Self.appID(Self.assertingApp.bundleID))
        figures.append(try measure(.assertionVerify, path: "/v1/verify/assertion", bodies: verifyBodies, bearer: assertingBackend))
        return figures
    }

    /// Sends each of `bodies` once to `path` with wrk, with the CPU time auth and PostgreSQL spent meanwhile.
    private func measure(_ flow: Flow, path: String, bodies: [String], capture: String? = nil, bearer: String? = nil) throws -> FlowFigures {
        let file = try write(bodies, to: "\(flow.rawValue.replacingOccurrences(of: " ", with: "-")).jsonl")
        let before = (auth: auth.cpuSeconds, database: CPUTime.ofPostgres())
        let (figures, raw) = try WrkRun(url: auth.baseURL + path, bodiesPath: file, capturePath: capture, bearer: bearer, count: bodies.count).run()
        let authSeconds = auth.cpuSeconds - before.auth
        let databaseSeconds = CPUTime.ofPostgres() - before.database
        FileHandle.standardError.write(Data(raw.utf8))
        let ok = figures.statuses[200] ?? 0
        return FlowFigures(
            flow: flow, requestsPerSecond: figures.scriptedRepliesPerSecond ?? figures.requestsPerSecond, p50: figures.p50, p99: figures.p99,
            ok: ok, others: figures.statuses.filter { $0.key != 200 }.map { "\($0.value)×\($0.key)" }.joined(separator: ", "),
            authCPU: authSeconds * 1000 / Double(max(ok, 1)), databaseCPU: databaseSeconds * 1000 / Double(max(ok, 1)))
    }

    /// Stores challenges as `POST /v1/auth/challenge` would, in bulk, and returns their nonces.
    private func issueChallenges(_ count: Int) async throws -> [[UInt8]] {
        let nonces = (0..<count).map { _ in (0..<32).map { _ in UInt8.random(in: 0...255) } }
        try await database.withTransaction(logger: logger) { connection in
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

    /// A backend key of `appID`, stored as admin stores one.
    private func backendKey(for appID: String) async throws -> String {
        let key = BearerSecret.generate(prefix: BackendKeyStore.prefix)
        try await database.query(
            """
            INSERT INTO backend_keys (key_id, app_id, name, key_hash, key_hint)
            VALUES (\(UUID()), \(appID), 'benchmark', \(BearerSecret.hash(key)), 'bk_prod_…')
            """)
        return key
    }

    private func jsonLine(_ object: [String: String]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    private func write(_ lines: [String], to name: String) throws -> String {
        let path = work.appendingPathComponent(name).path
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The refresh tokens wrk captured (one file per thread).
    private func capturedTokens(_ prefix: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: work.path).filter { $0.hasPrefix(prefix + ".") }.flatMap {
            try String(contentsOfFile: work.appendingPathComponent($0).path, encoding: .utf8).split(separator: "\n").map(String.init)
        }
    }

    /// The `sub` claim of a JWT (the attested key id, base64url), read without verifying.
    private func subject(of token: String) -> String? {
        let parts = token.split(separator: ".")
        guard parts.count == 3, let payload = Base64.decode(String(parts[1])),
            let claims = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any]
        else { return nil }
        return claims["sub"] as? String
    }
}
