import ArgumentParser
import Foundation

/// `sesame audit list`.
struct AuditListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "Print the app's audit log, oldest first: when, who, what, pattern, revision.")

    @OptionGroup var server: ServerOptions
    @Option(help: "Only entries after this id (from a previous listing).") var after: Int = 0
    @Option(help: "At most this many entries (1 to 1000).") var limit: Int = 100

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let entries = try await client.call { try await $0.listAudit(query: .init(after: after, limit: limit)).ok.body.json.entries }
            if server.printedReply(of: client) { return }
            Console.current.out(
                Table.render(
                    ["ID", "AT", "WHO", "WHAT", "PATTERN", "REVISION"],
                    entries.map { [text($0.id), text($0.at), $0.actor, $0.action, text($0.pattern), text($0.revision)] }))
        }
    }
}

/// `sesame audit verify`.
struct AuditVerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check the audit log's hash chain; print its head to keep outside Sesame.",
        discussion: """
            Each entry carries the hash of the one before, so an entry changed or removed in the \
            database breaks the chain at that point. Keep the head this prints somewhere Sesame \
            cannot write (a ticket, a git commit, a monitoring system) and pass it back with --head: \
            the check then also fails if entries were cut from the end or the log was rewritten. \
            Exit status 1 when the chain is broken or no longer reaches the head.
            """)

    @OptionGroup var server: ServerOptions
    @Option(help: "A head printed by an earlier verify (64 hex digits) that the chain must still reach.") var head: String?

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let verdict = try await client.call { try await $0.verifyAudit(query: .init(head: head)).ok.body.json }
            if !server.printedReply(of: client) { Console.current.out(verdict.message) }
            guard verdict.intact else {
                throw CLIFailure("the audit log failed verification", exitCode: 1)
            }
        }
    }
}
