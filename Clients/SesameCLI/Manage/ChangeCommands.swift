import ArgumentParser
import Foundation

/// `sesame changes list`.
struct ChangesListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the changes proposed under the two-person rule, newest first.")

    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await reportingFailures {
            let reply = try await server.client().get("changes")
            if server.json { return Console.current.out(String(decoding: reply.raw, as: UTF8.self)) }
            let changes = reply.object["changes"] as? [[String: Any]] ?? []
            Console.current.out(
                Table.render(
                    ["ID", "STATE", "KIND", "WHAT", "PROPOSED BY", "EXPIRES", "DECIDED BY", "OUTCOME"],
                    changes.map {
                        [text($0["id"]), text($0["state"]), text($0["kind"]), text($0["summary"]), text($0["proposer"]), text($0["expiresAt"]),
                         text($0["decidedBy"]), text($0["outcome"])]
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
            let reply = try await server.client().get("changes/\(id)")
            if server.json { return Console.current.out(String(decoding: reply.raw, as: UTF8.self)) }
            let change = reply.object["change"] as? [String: Any] ?? [:]
            Console.current.out(
                "\(text(change["summary"])) (\(text(change["state"])), proposed by \(text(change["proposer"])))\n"
                    + JSONDisplay.describe(reply.object["request"], pretty: true))
        }
    }
}

/// What `sesame changes approve|reject|break-glass` take.
struct ChangeDecision: ParsableArguments {
    @OptionGroup var server: ServerOptions
    @Argument(help: "The change's id, from 'sesame changes list'.") var id: String
    @Option(help: "Why (required for break-glass; audited).") var reason: String?

    func decide(_ decision: String) async throws {
        try await reportingFailures {
            var body: [String: Any] = [:]
            body["reason"] = reason
            let reply = try await server.client().post("changes/\(id)/\(decision)", body)
            server.show(reply) { text($0.object["message"]) }
        }
    }
}

struct ChangesApproveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "approve", abstract: "Approve a change another person or key proposed: it is applied exactly as proposed.")
    @OptionGroup var decision: ChangeDecision
    func run() async throws { try await decision.decide("approve") }
}

struct ChangesRejectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "reject", abstract: "Reject a proposed change (or withdraw your own).")
    @OptionGroup var decision: ChangeDecision
    func run() async throws { try await decision.decide("reject") }
}

struct ChangesBreakGlassCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "break-glass",
        abstract: "With the operator token (--key), apply a proposed change without a second person; --reason is required and audited.")
    @OptionGroup var decision: ChangeDecision
    func run() async throws { try await decision.decide("break-glass") }
}
