import Crypto
import Foundation
import Hummingbird
import Logging
import PostgresNIO
import SesameDomain
import SesameEncryption
import SesameHTTP
import SesameJSON
import SesameStorage
import Synchronization

/// What a guarded change answers: every one says what it did in a sentence.
protocol ChangeAnswer: ResponseEncodable, Sendable {
    var message: String { get }
}

/// The two-person rule. A route whose change an app's policy guards (`requireApproval`) hands its
/// decoded request here: applied at once when the app does not guard it, else stored as a proposal
/// (the request exactly as made, what it was made against) that another person or key approves,
/// which runs the same code the route would have run. A proposal whose base has moved (a newer
/// revision of the pattern, another policy) is stale; one not approved within a day expires.
final class ChangeApprovals: Sendable {
    /// How long a proposal may be approved.
    static let lifetime: Duration = .seconds(24 * 3600)

    /// A route's change, with its request type erased: checked (without changing anything, its
    /// summary and base), and made; from the request as stored (a proposal's), or as the route
    /// decoded it (`…Now`: no round trip through JSON for a change made or proposed at once).
    struct Route: Sendable {
        let prepare: @Sendable (_ appID: String, _ request: Data) async throws -> (summary: String, base: String?)
        let apply: @Sendable (_ appID: String, _ request: Data, _ caller: Caller) async throws -> any ChangeAnswer
        let prepareNow: @Sendable (_ appID: String, _ request: any Sendable) async throws -> (summary: String, base: String?)
        let applyNow: @Sendable (_ appID: String, _ request: any Sendable, _ caller: Caller) async throws -> any ChangeAnswer
        /// The stored request as a reader of the proposal sees it (a relay's header values withheld).
        let shown: @Sendable (_ request: Data) -> Data
    }

    /// A route handed a request of another type than it registered: a programming error, answered 500.
    struct MismatchedRequest: Error {}

    /// By route key: the guarded kind, and which of its routes (`revocation:device`).
    private let routes = Mutex<[String: Route]>([:])
    let database: Database
    /// Seals each request while it waits: a publish's holds the config's values.
    let encryption: EnvelopeEncryption
    let policies: PolicyStore
    let logger: Logger

    init(database: Database, encryption: EnvelopeEncryption, policies: PolicyStore, logger: Logger) {
        self.database = database
        self.encryption = encryption
        self.policies = policies
        self.logger = logger
    }

    /// Registers the code of `kind`: `prepare` validates a request and reads its base, `apply`
    /// makes the change. Called once per kind while the routes are built.
    func register<Body: Codable & Sendable>(
        _ kind: GuardedChange, _ type: Body.Type,
        prepare: @escaping @Sendable (_ appID: String, _ body: Body) async throws -> (summary: String, base: String?),
        apply: @escaping @Sendable (_ appID: String, _ body: Body, _ caller: Caller) async throws -> any ChangeAnswer,
        as variant: String? = nil, shown: (@Sendable (_ body: Body) -> Body)? = nil
    ) {
        register(Self.key(kind, variant), type, prepare: prepare, apply: apply, shown: shown)
    }

    /// Registers the code of the change stored under `key` (`GuardedAccess` changes use their own).
    func register<Body: Codable & Sendable>(
        _ key: String, _ type: Body.Type,
        prepare: @escaping @Sendable (_ appID: String, _ body: Body) async throws -> (summary: String, base: String?),
        apply: @escaping @Sendable (_ appID: String, _ body: Body, _ caller: Caller) async throws -> any ChangeAnswer,
        shown: (@Sendable (_ body: Body) -> Body)? = nil
    ) {
        let decode: @Sendable (Data) throws -> Body = { try JSONDecoder().decode(Body.self, from: $0) }
        let typed: @Sendable (any Sendable) throws -> Body = { request in
            guard let body = request as? Body else { throw MismatchedRequest() }
            return body
        }
        routes.withLock {
            $0[key] = Route(
                prepare: { appID, request in try await prepare(appID, try decode(request)) },
                apply: { appID, request, caller in try await apply(appID, try decode(request), caller) },
                prepareNow: { appID, request in try await prepare(appID, try typed(request)) },
                applyNow: { appID, request, caller in try await apply(appID, try typed(request), caller) },
                shown: { request in
                    guard let shown else { return request }
                    // What cannot be read back is not shown: never the request as stored.
                    guard let body = try? decode(request), let encoded = try? Self.encode(shown(body)) else { return Data("{}".utf8) }
                    return encoded
                })
        }
    }

    /// A guarded route's handler: makes the change, or proposes it (`202`) when the app's policy
    /// requires approval for `kind`.
    func handle(
        _ kind: GuardedChange, variant: String? = nil, appID: String, caller: Caller, body: some Encodable & Sendable, request: Request,
        context: SesameRequestContext
    ) async throws -> Response {
        let guarded = try await policies.policy(appID: appID).requireApproval.contains(kind)
        return try await handle(Self.key(kind, variant), named: kind.rawValue, guarded: guarded, appID: appID, caller: caller, body: body, request: request, context: context)
    }

    /// A route's handler for a change to who may act (`GuardedAccess`): made at once unless the
    /// app's policy puts anything under the rule, and the caller is not the operator.
    func handleAccess(
        _ access: GuardedAccess, appID: String, caller: Caller, body: some Encodable & Sendable, request: Request, context: SesameRequestContext
    ) async throws -> Response {
        let guarded = try await accessGuarded(appID: appID, caller: caller)
        return try await handle(access.key, named: access.key, guarded: guarded, appID: appID, caller: caller, body: body, request: request, context: context)
    }

    private func handle(
        _ key: String, named name: String, guarded: Bool, appID: String, caller: Caller, body: some Encodable & Sendable, request: Request,
        context: SesameRequestContext
    ) async throws -> Response {
        let route = try self.route(key)
        guard guarded else {
            return try await route.applyNow(appID, body, caller).response(from: request, context: context)
        }
        let (summary, base) = try await route.prepareNow(appID, body)
        // Whoever decides it must hold the role the change itself needs (an owner's device revocation is an owner's to approve).
        let role = DashboardPermissions.requiredRole(method: request.method, path: request.uri.path)
        let proposal = try await propose(
            key, appID: appID, request: try Self.encode(body), summary: summary, base: base, caller: caller, deciderRole: role)
        var response = try ProposedResponse(message: Self.proposedMessage(name, proposal), proposal: proposal).response(from: request, context: context)
        response.status = .accepted
        return response
    }

    /// Whether a change to who may act on `appID` by `caller` needs a second person: while the
    /// app's policy guards anything, minting keys, inviting people and granting roles are guarded
    /// too (else one person mints the second approver). The operator's are not: the operator is
    /// the break-glass already.
    func accessGuarded(appID: String, caller: Caller) async throws -> Bool {
        guard caller != .operator else { return false }
        return !(try await policies.policy(appID: appID).requireApproval.isEmpty)
    }

    /// Proposes an access change whose credential was made waiting for proposal `id` (a key, an
    /// invitation): approving it lets the credential be used.
    func proposeAccess(
        _ access: GuardedAccess, id: UUID, appID: String, body: some Encodable, summary: String, caller: Caller
    ) async throws -> Proposal {
        try await propose(access.key, id: id, appID: appID, request: try Self.encode(body), summary: summary, base: nil, caller: caller)
    }

    static func proposedMessage(_ name: String, _ proposal: Proposal) -> String {
        "The app's policy requires a second person for this (\(name)): proposed as change \(proposal.id.uuidString.lowercased()). "
            + "Another member or key must approve it ('sesame changes approve \(proposal.id.uuidString.lowercased())') within 24 hours."
    }

    private static func encode(_ body: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(body)
    }

    private func route(_ key: String) throws -> Route {
        guard let route = routes.withLock({ $0[key] }) else { throw APIError.internalError }
        return route
    }

    static func key(_ kind: GuardedChange, _ variant: String?) -> String {
        variant.map { "\(kind.rawValue):\($0)" } ?? kind.rawValue
    }

    // MARK: Proposals

    private func propose(
        _ kind: String, id: UUID = UUID(), appID: String, request: Data, summary: String, base: String?, caller: Caller,
        deciderRole: AccountRole = .owner
    ) async throws -> Proposal {
        let seconds = Double(Self.lifetime.components.seconds)
        let sealed = Data(try encryption.seal(request, context: SealingContext.proposalRequest(appID: appID, proposalID: id)))
        let digest = Data(SHA256.hash(data: request))
        let principal = try await Principals.standing(of: caller.auditName, appID: appID, database: database, logger: logger).principal
        try await dropExpiredRequests()
        return try await database.client.withRefusingTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                INSERT INTO change_proposals
                    (proposal_id, app_id, kind, request_sealed, request_sha256, summary, base, proposer, proposer_principal, decider_role, state,
                     expires_at)
                VALUES (\(id), \(appID), \(kind), \(sealed), \(digest), \(summary), \(base), \(caller.auditName), \(principal),
                        \(deciderRole.rawValue), 'pending', now() + \(seconds) * INTERVAL '1 second')
                RETURNING \(unescaped: Proposal.columns)
                """, logger: logger)
            let proposal = try await Proposal.first(of: rows)
            try await AuditLog.append(
                AuditEntry(
                    actor: caller.auditName, action: .changePropose,
                    details: ["proposalId": .string(id.uuidString.lowercased()), "kind": .string(kind), "summary": .string(summary)]),
                appID: appID, on: connection, logger: logger)
            return proposal
        }
    }

    /// Drops the requests of proposals that expired undecided: what they held is kept no longer
    /// than a proposal may be approved.
    private func dropExpiredRequests() async throws {
        try await database.client.query(
            """
            UPDATE change_proposals SET request = NULL, request_sealed = NULL
            WHERE state = 'pending' AND expires_at < now() AND (request IS NOT NULL OR request_sealed IS NOT NULL)
            """, logger: logger)
    }

    /// The app's proposals, newest first (the last 100).
    func list(appID: String) async throws -> [Proposal] {
        try await dropExpiredRequests()
        let rows = try await database.client.query(
            "SELECT \(unescaped: Proposal.columns) FROM change_proposals WHERE app_id = \(appID) ORDER BY created_at DESC LIMIT 100",
            logger: logger)
        return try await Proposal.all(of: rows)
    }

    /// Proposal `id` of `appID` (of any app when nil) with its request as its kind shows it (nil
    /// once it was decided or expired: only its SHA-256 is kept), recorded as read (a publish's
    /// request holds the config's values).
    func read(_ id: UUID, appID: String?, caller: Caller) async throws -> (Proposal, String?) {
        var found = try await fetchRecordingRead(id, appID: appID, caller: caller)
        if let request = found.1, let route = routes.withLock({ $0[found.0.kind] }) {
            found.1 = String(decoding: route.shown(Data(request.utf8)), as: UTF8.self)
        }
        return found
    }

    /// Proposal `id` with its request as stored (never shown: a relay's header values are in it),
    /// recorded as read.
    private func fetchRecordingRead(_ id: UUID, appID: String?, caller: Caller) async throws -> (Proposal, String?) {
        let found = try await fetch(id, appID: appID)
        try await database.client.withRefusingTransaction(logger: logger) { connection in
            try await AuditLog.append(
                AuditEntry(actor: caller.auditName, action: .changeRead, details: ["proposalId": .string(id.uuidString.lowercased())]),
                appID: found.0.appID, on: connection, logger: logger)
        }
        return found
    }

    private func fetch(_ id: UUID, appID: String?) async throws -> (Proposal, String?) {
        let rows = try await database.client.query(
            """
            SELECT \(unescaped: Proposal.columns), request, request_sealed FROM change_proposals
            WHERE proposal_id = \(id) AND (\(appID)::text IS NULL OR app_id = \(appID))
            """, logger: logger)
        for try await (id, app, kind, summary, base, proposer, state, created, expires, decidedBy, decidedAt, outcome, plain, sealed) in rows.decode(
            (UUID, String, String, String, String?, String, String, Date, Date, String?, Date?, String?, String?, Data?).self)
        {
            // Written before requests were sealed: plaintext until decided.
            var request = plain
            if let sealed {
                request = String(decoding: try encryption.open(sealed, context: SealingContext.proposalRequest(appID: app, proposalID: id)), as: UTF8.self)
            }
            return (
                Proposal(
                    id: id, appID: app, kind: kind, summary: summary, base: base, proposer: proposer, state: state, createdAt: created,
                    expiresAt: expires, decidedBy: decidedBy, decidedAt: decidedAt, outcome: outcome), request)
        }
        throw ApprovalErrors.notFound
    }

    /// Approves proposal `id` as `approver` and applies it exactly as proposed; `breakGlass` (the
    /// operator alone, with a reason) skips the second person and is audited as such.
    func approve(_ id: UUID, appID: String?, approver: Caller, breakGlass reason: String? = nil) async throws -> (Proposal, String) {
        // The request as stored, not as a reader is shown it: what was proposed is what applies.
        let (proposal, stored) = try await fetchRecordingRead(id, appID: appID, caller: approver)
        guard proposal.state == "pending" else { throw ApprovalErrors.decided(proposal.state) }
        guard proposal.expiresAt > Date(), let request = stored else {
            try await finish(id, state: "failed", by: approver, outcome: "expired before it was approved")
            throw ApprovalErrors.expired
        }
        if reason == nil {
            try await refuseUnlessSecondPerson(approver, for: proposal)
            let proposer = try await Principals.standing(of: proposal.proposer, appID: proposal.appID, database: database, logger: logger)
            guard proposer.active else {
                try await finish(id, state: "failed", by: approver, outcome: "its proposer's key was revoked or they left the app")
                throw ApprovalErrors.proposerGone
            }
        }
        let route = try self.route(proposal.kind)
        // One decision: whoever moves it out of `pending` first applies it.
        guard try await claim(id, by: approver) else { throw ApprovalErrors.decided("being decided") }
        let data = Data(request.utf8)
        let answer: any ChangeAnswer
        do {
            let (_, base) = try await route.prepare(proposal.appID, data)
            guard base == proposal.base else { throw ApprovalErrors.stale }
            // Checked again inside the change's own transaction, where a store can (ProposalBase).
            answer = try await ProposalBase.$expected.withValue(proposal.base) { try await route.apply(proposal.appID, data, approver) }
        } catch {
            let outcome = (error as? APIError)?.message ?? "it could not be applied (see the server's log)"
            try await finish(id, state: "failed", by: approver, outcome: outcome)
            throw error
        }
        try await finish(id, state: "applied", by: approver, outcome: answer.message, audit: (proposal, reason))
        if let reason {
            logger.critical("break-glass: a change was applied without a second person", metadata: [
                "proposal": "\(id)", "app": "\(proposal.appID)", "kind": "\(proposal.kind)", "reason": "\(reason)",
            ])
        }
        return (try await fetch(id, appID: nil).0, answer.message)
    }

    /// Refuses an approver who is not a second person: the proposer's own principal (a key they
    /// made, or one made by a key they made), a key made or a role granted after the proposal
    /// (minted to approve it), a key for a policy change (only a person), or not an owner for a
    /// change of the policy or of who may act.
    private func refuseUnlessSecondPerson(_ approver: Caller, for proposal: Proposal) async throws {
        guard approver.auditName != proposal.proposer else { throw ApprovalErrors.selfApproval }
        let standing = try await Principals.standing(of: approver.auditName, appID: proposal.appID, database: database, logger: logger)
        let stored = try await storedDecision(proposal.id)
        if standing.principal == (stored.proposerPrincipal ?? proposal.proposer) { throw ApprovalErrors.sameProposer }
        if let since = standing.since, since >= proposal.createdAt { throw ApprovalErrors.approverTooNew }
        let access = GuardedAccess(key: proposal.kind)
        let personOnly = proposal.kind == GuardedChange.policy.rawValue || access?.needsPerson == true
        if case .provisioningKey = approver, personOnly { throw ApprovalErrors.personRequired }
        try refuseUnlessRole(approver, of: proposal, stored: stored)
    }

    /// Refuses a person deciding `proposal` (approving, or rejecting another's) without the role the
    /// change itself needs: an owner's for the policy, who may act, devices and relays.
    private func refuseUnlessRole(_ decider: Caller, of proposal: Proposal, stored: StoredDecision) throws {
        let ownersOnly = proposal.kind == GuardedChange.policy.rawValue || GuardedAccess(key: proposal.kind) != nil
        // Proposed before the role was recorded: an editor's, as every guarded change but those was.
        let required = ownersOnly ? .owner : stored.deciderRole ?? .editor
        if case .account(_, _, _, let role) = decider, role < required { throw AdminErrors.roleTooLow(role, required: required) }
    }

    /// What a proposal's decision is held to, beside the proposal: whose principal proposed it, and
    /// the least role of a person who decides it (nil when proposed before it was recorded).
    private struct StoredDecision {
        let proposerPrincipal: String?
        let deciderRole: AccountRole?
    }

    private func storedDecision(_ id: UUID) async throws -> StoredDecision {
        let rows = try await database.client.query(
            "SELECT proposer_principal, decider_role FROM change_proposals WHERE proposal_id = \(id)", logger: logger)
        for try await (principal, role) in rows.decode((String?, String?).self) {
            return StoredDecision(proposerPrincipal: principal, deciderRole: role.flatMap(AccountRole.init(rawValue:)))
        }
        return StoredDecision(proposerPrincipal: nil, deciderRole: nil)
    }

    /// Rejects (or, by its proposer, withdraws) proposal `id`.
    func reject(_ id: UUID, appID: String, caller: Caller, reason: String?) async throws -> Proposal {
        let (proposal, _) = try await fetch(id, appID: appID)
        // Its proposer withdraws it whatever their role; anyone else needs the role the change needs.
        if caller.auditName != proposal.proposer { try refuseUnlessRole(caller, of: proposal, stored: try await storedDecision(id)) }
        guard proposal.state == "pending", try await claim(id, by: caller) else { throw ApprovalErrors.decided(proposal.state) }
        try await finish(id, state: "rejected", by: caller, outcome: reason.map { "rejected: \($0)" } ?? "rejected")
        try await database.client.withRefusingTransaction(logger: logger) { connection in
            try await AuditLog.append(
                AuditEntry(
                    actor: caller.auditName, action: .changeReject,
                    details: ["proposalId": .string(id.uuidString.lowercased()), "kind": .string(proposal.kind), "reason": reason.map { .string($0) } ?? .null]),
                appID: appID, on: connection, logger: logger)
        }
        return try await fetch(id, appID: appID).0
    }

    private func claim(_ id: UUID, by caller: Caller) async throws -> Bool {
        let rows = try await database.client.query(
            """
            UPDATE change_proposals SET state = 'applying', decided_by = \(caller.auditName), decided_at = now()
            WHERE proposal_id = \(id) AND state = 'pending' RETURNING proposal_id
            """, logger: logger)
        for try await _ in rows.decode(UUID.self) { return true }
        return false
    }

    private func finish(
        _ id: UUID, state: String, by caller: Caller, outcome: String, audit: (proposal: Proposal, breakGlass: String?)? = nil
    ) async throws {
        try await database.client.withRefusingTransaction(logger: logger) { connection in
            // Decided: the request is dropped, its SHA-256 stays.
            try await connection.query(
                """
                UPDATE change_proposals SET state = \(state), decided_by = \(caller.auditName), decided_at = now(), outcome = \(outcome),
                    request = NULL, request_sealed = NULL
                WHERE proposal_id = \(id)
                """, logger: logger)
            guard let (proposal, breakGlass) = audit else { return }
            var details: [String: JSONValue] = [
                "proposalId": .string(id.uuidString.lowercased()), "kind": .string(proposal.kind), "proposedBy": .string(proposal.proposer),
            ]
            if let breakGlass { details["reason"] = .string(breakGlass) }
            try await AuditLog.append(
                AuditEntry(actor: caller.auditName, action: breakGlass == nil ? .changeApprove : .changeBreakGlass, details: details),
                appID: proposal.appID, on: connection, logger: logger)
        }
    }
}

/// The base a proposal was made against, while its approval applies it. A change whose base is
/// read under a lock (a pattern's live revision) checks it again inside the transaction that makes
/// it, so two approvals against one base cannot both pass the check before either applies: the
/// second finds the base moved (`409 proposal_stale`).
enum ProposalBase {
    @TaskLocal static var expected: String?

    /// Refuses the change when an approval is applying it and `current` is not what it was proposed against.
    static func check(_ current: String) throws {
        if let expected, expected != current { throw ApprovalErrors.stale }
    }
}

/// Changes to who may act on an app: guarded while its policy guards anything (`accessGuarded`),
/// stored as proposals of their own kinds (`access:key`, `access:invite`, `access:role`).
enum GuardedAccess: String, Sendable {
    /// Making a provisioning key (by a key or a person): the key is refused until approved.
    case key
    /// Inviting a person: the invitation cannot be accepted until approved.
    case invite
    /// Changing a person's role.
    case role

    static let prefix = "access:"

    init?(key: String) {
        guard key.hasPrefix(Self.prefix) else { return nil }
        self.init(rawValue: String(key.dropFirst(Self.prefix.count)))
    }

    /// The proposal kind it is stored as.
    var key: String { Self.prefix + rawValue }
    /// Whether only a person (an owner) approves it: people are let in by people. A key's making
    /// may be approved by another principal's key too.
    var needsPerson: Bool { self != .key }
}

/// A proposal as listed (its request only through `GET changes/{id}`).
struct Proposal: Encodable, Sendable {
    static let columns = "proposal_id, app_id, kind, summary, base, proposer, state, created_at, expires_at, decided_by, decided_at, outcome"

    @LowercaseUUID var id: UUID
    let appID: String
    let kind: String
    let summary: String
    let base: String?
    let proposer: String
    /// `pending`, `applying`, `applied`, `rejected` or `failed` (stale, expired, or refused when applied).
    let state: String
    let createdAt: Date
    let expiresAt: Date
    let decidedBy: String?
    let decidedAt: Date?
    let outcome: String?

    enum CodingKeys: String, CodingKey {
        case id, kind, summary, proposer, state, createdAt, expiresAt, decidedBy, decidedAt, outcome
    }

    static func all(of rows: PostgresRowSequence) async throws -> [Proposal] {
        var proposals: [Proposal] = []
        for try await (id, app, kind, summary, base, proposer, state, created, expires, decidedBy, decidedAt, outcome) in rows.decode(
            (UUID, String, String, String, String?, String, String, Date, Date, String?, Date?, String?).self)
        {
            proposals.append(
                Proposal(
                    id: id, appID: app, kind: kind, summary: summary, base: base, proposer: proposer, state: state, createdAt: created,
                    expiresAt: expires, decidedBy: decidedBy, decidedAt: decidedAt, outcome: outcome))
        }
        return proposals
    }

    static func first(of rows: PostgresRowSequence) async throws -> Proposal {
        guard let first = try await all(of: rows).first else { throw StorageError.missingRow("the proposal just written") }
        return first
    }
}

/// `202` from a guarded route: the change waits for approval.
struct ProposedResponse: ResponseEncodable {
    let message: String
    let proposal: Proposal
}

enum ApprovalErrors {
    static let notFound = APIError(.notFound, code: AdminErrorCode.proposalNotFound, message: "The app has no such proposed change; see 'sesame changes list'.")
    static let selfApproval = APIError(
        .forbidden, code: AdminErrorCode.selfApproval, message: "A change needs a second person: its proposer cannot approve it. Ask another member or key.")
    static let stale = APIError(
        .conflict, code: AdminErrorCode.proposalStale,
        message: "What the change was proposed against has changed since (a newer revision, another policy); propose it again.")
    static let expired = APIError(.conflict, code: AdminErrorCode.proposalExpired, message: "The proposal was not approved within 24 hours; propose it again.")
    static let sameProposer = APIError(
        .forbidden, code: AdminErrorCode.selfApproval,
        message: "A change needs a second person: this credential stands for the proposer (a key they made, or one made from it). Ask another person.")
    static let approverTooNew = APIError(
        .forbidden, code: AdminErrorCode.approverTooNew,
        message: "This key was made, or this person's role granted, after the change was proposed: it cannot be the second person for it.")
    static let personRequired = APIError(
        .forbidden, code: AdminErrorCode.personRequired,
        message: "Only a person (an owner signed in to the dashboard) approves a change of the policy or of who may act, not a key.")
    static let proposerGone = APIError(
        .conflict, code: AdminErrorCode.proposerGone, message: "The proposer's key was revoked or they left the app since: the change is void; propose it again.")
    static func decided(_ state: String) -> APIError {
        APIError(.conflict, code: AdminErrorCode.proposalDecided, message: "The proposal is \(state), not pending.")
    }
}
