import ArgumentParser
import Foundation

/// `sesame kill-switch`.
struct KillSwitchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kill-switch", abstract: "Switch app versions off (apps get an error with your reason), back on, or list them.")

    @OptionGroup var server: ServerOptions
    @Option(help: "Comma-separated versions or patterns, such as 2.1.3,1.*.") var versions: String?
    @Option(help: "Why: shown to users of the switched-off versions.") var reason: String?
    @Flag(help: "Switch the versions back on.") var clear = false
    @Flag(help: "List the versions that are off.") var list = false

    func validate() throws {
        if list { return }
        guard versions != nil else { throw ValidationError("give --versions (or --list)") }
        guard clear || reason != nil else { throw ValidationError("switching versions off needs --reason, which users see") }
    }

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            if list {
                let reply = try await client.get("kill-switch")
                if server.json { return Console.current.out(String(decoding: reply.raw, as: UTF8.self)) }
                let killed = reply.object["killed"] as? [[String: Any]] ?? []
                guard !killed.isEmpty else { return Console.current.out("No version is switched off.") }
                return Console.current.out(Table.render(["VERSION", "SINCE", "REASON"], killed.map { [text($0["version"]), text($0["createdAt"]), text($0["reason"])] }))
            }
            var body: [String: Any] = [
                "versions": (versions ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }, "enabled": clear,
            ]
            body["reason"] = reason
            let reply = try await client.post("kill-switch", body)
            server.show(reply) { $0.message(or: "Done.") }
        }
    }
}

/// `sesame revoke`.
struct RevokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke", abstract: "Emergency revocation: tokens issued until now for versions under a pattern stop working.")

    @OptionGroup var server: ServerOptions
    @Option(help: "The version pattern: *, N.*, N.N.* or N.N.N.") var ver: String
    @Option(help: "Seconds within which running apps must refresh (0 to 86400).") var forceRefreshTtl = 0

    func run() async throws {
        try await reportingFailures {
            let reply = try await server.client().post("emergency-revoke", ["version": ver, "force_refresh_ttl": forceRefreshTtl])
            server.show(reply) { $0.message(or: "Revoked.") }
        }
    }
}

/// `sesame blob upload`.
struct BlobUploadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upload", abstract: "Upload a file as a blob attested apps may download (replaces a blob of the same key).")

    @OptionGroup var server: ServerOptions
    @Option(help: "The file to upload.") var file: String
    @Option(help: "The blob's key: letters, digits, '.', '_' and '-'. Default: the file's name.") var blobKey: String?
    @Option(help: "Its media type.") var contentType = "application/octet-stream"

    func run() async throws {
        try await reportingFailures {
            let data = try readFile(file)
            let key = blobKey ?? URL(fileURLWithPath: file).lastPathComponent
            guard let escaped = key.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "._-"))) else {
                throw CLIFailure("'\(key)' cannot be a blob key", exitCode: 2)
            }
            let reply = try await server.client().put("blob/\(escaped)", data: data, contentType: contentType)
            if server.json { return Console.current.out(String(decoding: reply.raw, as: UTF8.self)) }
            let blob = reply.object["blob"] as? [String: Any] ?? [:]
            Console.current.out("\(reply.object["message"] as? String ?? "Stored.") SHA-256 \(text(blob["sha256"])).")
        }
    }
}
