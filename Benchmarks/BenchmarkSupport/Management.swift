import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationEssentialsCompat

/// The management calls benchmarks make, against a live admin.
public struct Management: Sendable {
    public let admin: any TestClientProtocol
    /// A provisioning key, or the operator token for registering apps.
    public let key: String

    public init(admin: any TestClientProtocol, key: String) {
        self.admin = admin
        self.key = key
    }

    /// POSTs `json` to `/v1/admin/<path>`; returns the JSON answer.
    public func call(_ path: String, _ json: [String: Any]) async throws -> [String: Any] {
        try await admin.execute(
            uri: "/v1/admin/\(path)", method: .post, headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
            body: ByteBuffer(data: try JSONSerialization.data(withJSONObject: json))
        ) { try JSONSerialization.jsonObject(with: Data(buffer: $0.body)) as? [String: Any] ?? [:] }
    }

    /// Registers an app (with the operator token) and returns a provisioning key for it.
    public func createKey(teamID: String, bundleID: String) async throws -> String {
        let answer = try await call("keys/create", ["teamId": teamID, "bundleId": bundleID])
        guard let key = answer["key"] as? String else { throw BenchmarkFailure("no provisioning key: \(answer)") }
        return key
    }

    /// Uploads `config` for the versions `version` matches (every version by default), to a
    /// `rollout` percentage of their installs when given; returns its revision.
    public func upload(_ config: [String: Any], version: String = "*", rollout: Double? = nil) async throws -> Int {
        var request: [String: Any] = ["version": version, "config": config]
        if let rollout { request["rollout"] = rollout }
        let answer = try await call("config/upload", request)
        guard let revision = answer["revision"] as? Int else { throw BenchmarkFailure("upload refused: \(answer)") }
        return revision
    }
}
