import HTTPTypes
import SesameDomain
import SesameHTTP
import SesameStorage
import Synchronization

/// Bounds what `audit/verify` costs an admin replica: one walk of an app's log at a time, and at
/// most `maxWaiting` more waiting behind it. A request whose head (none, or the one it names) a
/// running or waiting walk already has shares that walk's verdict; past the bound it is refused,
/// `503` with `Retry-After`, instead of queueing work nobody may be waiting for.
///
/// Every verdict comes from a walk that was under way, or began, after the request arrived: none
/// is reused once finished, so an entry changed since is caught by the next call.
final class AuditVerifications: Sendable {
    typealias Walk = @Sendable (_ appID: String, _ expectedHead: [UInt8]?) async throws -> AuditChain.Verifier

    /// Walks that may wait behind an app's running one.
    static let maxWaiting = 4

    private struct Pending {
        let id: UInt64
        let expectedHead: [UInt8]?
        let task: Task<AuditChain.Verifier, any Error>
    }

    private struct State {
        /// By app: its walks not finished yet, oldest (running) first.
        var pending: [String: [Pending]] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())
    private let walk: Walk

    /// `walk` reads and checks the whole chain (`AuditLog.verify`).
    init(walk: @escaping Walk) {
        self.walk = walk
    }

    /// 503 past the bound: the app's chain is being checked for other requests.
    static let busy = APIError(
        .serviceUnavailable, code: CommonErrorCode.serviceUnavailable,
        message: "This app's audit log is being verified for other requests; retry shortly.", headers: [.retryAfter: "1"])

    /// The verdict of a walk of `appID`'s chain, against `expectedHead` when given.
    /// - Throws: `busy` when `maxWaiting` walks already wait behind the running one.
    func verify(appID: String, expectedHead: [UInt8]?) async throws -> AuditChain.Verifier {
        let task = try state.withLock { state throws(APIError) -> Task<AuditChain.Verifier, any Error> in
            let pending = state.pending[appID] ?? []
            if let same = pending.first(where: { $0.expectedHead == expectedHead }) { return same.task }
            guard pending.count <= Self.maxWaiting else { throw Self.busy }
            state.nextID += 1
            let id = state.nextID
            let previous = pending.last?.task
            let task = Task { [walk] in
                _ = try? await previous?.value  // one walk of the app at a time
                defer { self.finished(appID: appID, id: id) }
                return try await walk(appID, expectedHead)
            }
            state.pending[appID, default: []].append(Pending(id: id, expectedHead: expectedHead, task: task))
            return task
        }
        return try await task.value
    }

    private func finished(appID: String, id: UInt64) {
        state.withLock { state in
            state.pending[appID]?.removeAll { $0.id == id }
            if state.pending[appID]?.isEmpty == true { state.pending[appID] = nil }
        }
    }
}
