import Foundation
import HTTPTypes
import PostgresNIO
import SesameTestSupport
import Testing

/// Device overrides as a change: under the `rollback` rule, gone with their pattern.
@Suite("Admin: device overrides", .timeLimit(.minutes(2)))
struct OverrideTests {
    static let install = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"

    static func override(_ revision: Int, label: String = "Ana's iPhone") -> [String: Any] {
        ["version": "2.*", "install": install, "revision": revision, "label": label]
    }

    static func overrides(_ harness: AdminHarness) async throws -> Int {
        for try await count in try await harness.database.query("SELECT count(*) FROM config_overrides").decode(Int.self) { return count }
        return -1
    }

    @Test("deleting a pattern removes its overrides (audited); an override cannot be set on a deleted pattern")
    func goneWithThePattern() async throws {
        try await AdminHarness.run { harness in
            let key = try await harness.createKey()
            #expect(try await harness.upload(["v": 1], version: "2.*", key: key).status == .ok)
            #expect(try await harness.upload(["v": 2], version: "2.*", key: key).status == .ok)
            let set = try await harness.call(.post, "/v1/admin/config/overrides", credential: key, json: Self.override(1))
            #expect(set.status == .ok, "\(set.json)")
            #expect(try await Self.overrides(harness) == 1)

            let deleted = try await harness.call(.delete, "/v1/admin/config?version=2.*", credential: key)
            #expect(deleted.status == .ok, "\(deleted.json)")
            #expect(try await Self.overrides(harness) == 0, "the override outlived its pattern")
            let audit = try await harness.database.query("SELECT details->>'overridesRemoved' FROM audit_log WHERE action = 'config.delete'")
            for try await removed in audit.decode(String?.self) { #expect(removed == "1") }

            let onDeleted = try await harness.call(.post, "/v1/admin/config/overrides", credential: key, json: Self.override(2))
            #expect(onDeleted.status == .notFound && onDeleted.errorCode == "pattern_not_found", "\(onDeleted.json)")
            #expect(try await Self.overrides(harness) == 0)
        }
    }

    @Test("under the rollback rule an override is proposed, and set only when a second principal approves")
    func guardedByRollback() async throws {
        try await AdminHarness.run { harness in
            let (ana, ben) = try await ApprovalTests.guardedApp(harness, ["rollback"])
            #expect(try await harness.upload(["v": 1], version: "2.*", key: ana).status == .ok)
            #expect(try await harness.upload(["v": 2], version: "2.*", key: ana).status == .ok)

            let id = try ApprovalTests.proposalID(try await harness.call(.post, "/v1/admin/config/overrides", credential: ana, json: Self.override(1)))
            #expect(try await Self.overrides(harness) == 0, "set before approval")
            let own = try await harness.call(.post, "/v1/admin/changes/\(id)/approve", credential: ana)
            #expect(own.status == .forbidden && own.errorCode == "self_approval")
            let approved = try await harness.call(.post, "/v1/admin/changes/\(id)/approve", credential: ben)
            #expect(approved.status == .ok, "\(approved.json)")
            #expect(try await Self.overrides(harness) == 1)

            // A malformed override is refused before anything is proposed.
            let malformed = try await harness.call(.post, "/v1/admin/config/overrides", credential: ana, json: Self.override(1, label: " "))
            #expect(malformed.status == .badRequest && malformed.errorCode == "invalid_request", "\(malformed.json)")
            // So is a revision that cannot exist (the API fuzz had one proposed).
            let noRevision = try await harness.call(.post, "/v1/admin/config/overrides", credential: ana, json: Self.override(0))
            #expect(noRevision.status == .badRequest && noRevision.errorCode == "invalid_request", "\(noRevision.json)")
        }
    }
}
