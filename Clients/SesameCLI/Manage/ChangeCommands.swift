import ArgumentParser
import Foundation

/// `sesame changes list`.
struct ChangesListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the changes proposed under the two-person rule, newest first.")

    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let changes = try await client.call { try await $0.listChanges().ok.body.json.changes }
            if server.printedReply(of: client) { return }
            Console.current.out(
                Table.render(
                    ["ID", "STATE", "KIND", "WHAT", "PROPOSED BY", "EXPIRES", "DECIDED BY", "OUTCOME"],
                    changes.map {
                        [$0.id, JSONDisplay.describe($0.state), $0.kind, $0.summary, $0.proposer, text($0.expiresAt), text($0.decidedBy), text($0.outcome)]
                    }))
        }
    }
}

/// `sesame changes show`.
struct ChangesShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Print a proposed change and its request exactly as proposed (read before approving; audited).")

    @OptionGroup var server: ServerOptions
    @Argument(help: "The change's id, from 'sesame changes list'.") var id: String

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let proposal = try await client.call { try await $0.getChange(path: .init(id: id)).ok.body.json }
            if server.printedReply(of: client) { return }
            let change = proposal.change
            Console.current.out(
                "\(change.summary) (\(JSONDisplay.describe(change.state)), proposed by \(change.proposer))\n" + JSONDisplay.describe(proposal.request, pretty: true))
        }
    }
}

/// What `sesame changes approve|reject|break-glass` take.
struct ChangeDecision: ParsableArguments {
    @OptionGroup var server: ServerOptions
    @Argument(help: "The change's id, from 'sesame changes list'.") var id: String
    @Option(help: "Why (required for break-glass; audited).") var reason: String?

    enum Decision {
        case approve, reject, breakGlass
    }

    func decide(_ decision: Decision) async throws {
        try await reportingFailures {
            let client = try server.client()
            _ = try await client.call { api in
                switch decision {
                case .approve: _ = try await api.approveChange(path: .init(id: id))
                case .reject: _ = try await api.rejectChange(path: .init(id: id), body: .json(.init(reason: reason)))
                case .breakGlass: _ = try await api.breakGlassChange(path: .init(id: id), body: .json(.init(reason: reason)))
                }
            }
            server.confirm(client, or: "-")
        }
    }
}

struct ChangesApproveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "approve", abstract: "Approve a change another person or key proposed: it is applied exactly as proposed.")
    @OptionGroup var decision: ChangeDecision
    func run() async throws { try await decision.decide(.approve) }
}

struct ChangesRejectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "reject", abstract: "Reject a proposed change (or withdraw your own).")
    @OptionGroup var decision: ChangeDecision
    func run() async throws { try await decision.decide(.reject) }
}

struct ChangesBreakGlassCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "break-glass",
        abstract: "With the operator token (--key), apply a proposed change without a second person; --reason is required and audited.")
    @OptionGroup var decision: ChangeDecision
    func run() async throws { try await decision.decide(.breakGlass) }
}
