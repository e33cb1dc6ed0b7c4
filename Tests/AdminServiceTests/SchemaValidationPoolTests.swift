@testable import AdminService
import ConfigSchema
import Dispatch
import HTTPTypes
import SesameHTTP
import SesameJSON
import SesameTestSupport
import Testing

/// Schema checks have threads of their own and a share per app (issue 72): one app cannot queue
/// more than two, and a check's time runs from when it was asked for.
@Suite("Admin: the schema validation pool", .timeLimit(.minutes(1)))
struct SchemaValidationPoolTests {
    /// A check that spends steps enough for the budget to read its clock (every 1,024 steps).
    static func longCheck(_ budget: ValidationBudget) throws -> Int {
        let schema = try ConfigSchema(.object(["items": .object(["type": .string("integer")])]))
        let config = JSONValue.array((0..<5000).map { JSONValue.number(Double($0)) })
        return try schema.validate(config, budget: budget).count
    }

    @Test("two checks of one app at once (queued or running), the third refused 429 schema_validation_busy; another app admitted; a check queued past its second is too complex")
    func sharePerAppAndClockFromRequest() async throws {
        let pool = SchemaValidationPool(threads: 1)
        let held = DispatchSemaphore(value: 0)
        // The pool's one thread, held by the app's first check.
        let first = Task { try await pool.run(appID: "A") { _ in held.wait(); return -1 } }
        try await eventually("the first check runs") { pool.inHand("A") == 1 }
        let queued = Task { try await pool.run(appID: "A", Self.longCheck) }
        try await eventually("the second check waits") { pool.inHand("A") == 2 }
        do {
            _ = try await pool.run(appID: "A") { _ in 0 }
            Issue.record("a third check of one app was admitted")
        } catch let refusal as APIError {
            #expect(refusal.code == "schema_validation_busy" && refusal.status == .tooManyRequests)
        }
        let other = Task { try await pool.run(appID: "B", Self.longCheck) }
        try await eventually("another app's check is admitted") { pool.inHand("B") == 1 }
        try await Task.sleep(for: .milliseconds(1200))
        held.signal()
        #expect(try await first.value == -1)
        // Asked for more than a second before a thread took it: its budget's time is spent.
        await #expect(throws: ConfigSchema.TooComplex.self) { try await queued.value }
        // Asked for after that one, it too waited past its second.
        await #expect(throws: ConfigSchema.TooComplex.self) { try await other.value }
        // With the queue empty, a check runs within its time.
        #expect(try await pool.run(appID: "A", Self.longCheck) == 0)
        #expect(pool.inHand("A") == 0 && pool.inHand("B") == 0)
        try await pool.shutdown()
    }
}
