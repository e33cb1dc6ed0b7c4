import Foundation
import Hummingbird
import SesameDomain
import SesameHTTP
import SesameJSON

/// `changes`: the proposals the two-person rule holds back; approve, reject (or withdraw), and the
/// operator's break-glass.
struct ApprovalRoutes {
    let authenticator: AdminAuthenticator
    let approvals: ChangeApprovals

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.get("changes") { request, _ -> ProposalsResponse in
            let (appID, _) = try await authenticator.app(of: request)
            return ProposalsResponse(changes: try await approvals.list(appID: appID))
        }

        group.get("changes/:id") { request, context -> ProposalDetailResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            let (proposal, body) = try await approvals.read(try Self.id(context), appID: appID, caller: caller)
            return ProposalDetailResponse(change: proposal, request: body.map(Self.json) ?? .null)
        }

        group.post("changes/:id/approve") { request, context -> DecisionResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            let (proposal, message) = try await approvals.approve(try Self.id(context), appID: appID, approver: caller)
            return DecisionResponse(message: "Approved and applied: \(message)", change: proposal)
        }

        group.post("changes/:id/reject") { request, context -> DecisionResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            let body = try await request.decode(as: RejectRequest.self, context: context)
            if let reason = body.reason, reason.count > 500 { throw APIError.invalidField("reason", "must be at most 500 characters") }
            let proposal = try await approvals.reject(try Self.id(context), appID: appID, caller: caller, reason: body.reason)
            return DecisionResponse(message: "Rejected: the change will not be applied.", change: proposal)
        }

        // The operator alone, when no second person can be found: applied at once, audited as such.
        group.post("changes/:id/break-glass") { request, context -> DecisionResponse in
            guard try await authenticator.caller(of: request) == .operator else {
                throw APIError(.forbidden, code: AdminErrorCode.operatorRequired, message: "Break-glass is the operator's alone (the operator token).")
            }
            let body = try await request.decode(as: RejectRequest.self, context: context)
            guard let reason = body.reason?.trimmingCharacters(in: .whitespacesAndNewlines), (10...500).contains(reason.count) else {
                throw APIError.invalidField("reason", "is required: why no second person could approve (10 to 500 characters); it is audited")
            }
            let (proposal, message) = try await approvals.approve(try Self.id(context), appID: nil, approver: .operator, breakGlass: reason)
            return DecisionResponse(message: "Applied without a second person (break-glass, audited): \(message)", change: proposal)
        }
    }

    static func id(_ context: SesameRequestContext) throws -> UUID {
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else { throw ApprovalErrors.notFound }
        return id
    }

    static func json(_ text: String) -> JSONValue {
        (try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))) ?? .string(text)
    }
}

struct RejectRequest: Decodable {
    let reason: String?
}

struct ProposalsResponse: ResponseEncodable {
    let changes: [Proposal]
}

struct ProposalDetailResponse: ResponseEncodable {
    let change: Proposal
    /// The request exactly as proposed; null once the proposal was decided or expired (Sesame
    /// keeps a request no longer than it may be approved).
    let request: JSONValue
}

struct DecisionResponse: ResponseEncodable {
    let message: String
    let change: Proposal
}
