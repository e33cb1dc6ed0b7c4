import ArgumentParser
import Foundation

/// How to reach the management API, shared by every command that talks to it.
struct ServerOptions: ParsableArguments {
    @Option(help: "The Sesame gateway's URL (or set SESAME_URL).")
    var url: String?

    @Option(
        help: ArgumentHelp(
            "The provisioning key (sk_prod_…). Prefer the SESAME_KEY environment variable: a key typed on the command line lands in your shell history."
        ))
    var key: String?

    @Flag(help: "Print the server's JSON reply instead of a summary (for CI).")
    var json = false

    var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// The base URL, `SESAME_URL`, or the local suite's gateway.
    func baseURL() throws(CLIFailure) -> URL {
        let text = url ?? environment["SESAME_URL"] ?? "http://127.0.0.1:8080"
        guard let parsed = URL(string: text), parsed.scheme == "http" || parsed.scheme == "https", parsed.host != nil else {
            throw CLIFailure("'\(text)' is not an http(s) URL; pass --url or set SESAME_URL", exitCode: 2)
        }
        return parsed
    }

    /// The provisioning key from `--key` or `SESAME_KEY`.
    func provisioningKey() throws(CLIFailure) -> String {
        guard let key = key ?? environment["SESAME_KEY"], !key.isEmpty else {
            throw CLIFailure("no provisioning key: set SESAME_KEY (or pass --key)", exitCode: 2)
        }
        return key
    }

    /// Prints the last reply as the server sent it when `--json` asked for it; whether it did.
    func printedReply(of client: ManagementClient) -> Bool {
        if json { Console.current.out(client.rawReply) }
        return json
    }

    /// Prints the last reply with `--json`, else its `message` (or `fallback`).
    func confirm(_ client: ManagementClient, or fallback: String) {
        Console.current.out(json ? client.rawReply : client.message(or: fallback))
    }

    func client(credential: String? = nil) throws(CLIFailure) -> ManagementClient {
        let resolved: String
        if let credential { resolved = credential } else { resolved = try provisioningKey() }
        return ManagementClient(baseURL: try baseURL(), credential: resolved)
    }
}

/// A failure the CLI reports in one line, with the exit status it ends with (1: the server
/// refused; 2: the command could not be carried out).
struct CLIFailure: Error, CustomStringConvertible {
    let description: String
    let exitCode: Int32

    init(_ description: String, exitCode: Int32) {
        self.description = description
        self.exitCode = exitCode
    }
}

/// Runs a command body, reporting a failure as one line on standard error and the right exit status.
func reportingFailures(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let failure as CLIFailure {
        Console.current.error("sesame: \(failure.description)")
        throw ExitCode(failure.exitCode)
    }
}
