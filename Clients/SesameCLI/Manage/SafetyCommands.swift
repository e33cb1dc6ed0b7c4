import ArgumentParser
import Foundation
import OpenAPIRuntime

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
                let killed = try await client.call { try await $0.listKillSwitches().ok.body.json.killed }
                if server.printedReply(of: client) { return }
                guard !killed.isEmpty else { return Console.current.out("No version is switched off.") }
                return Console.current.out(Table.render(["VERSION", "SINCE", "REASON"], killed.map { [$0.version, text($0.createdAt), $0.reason] }))
            }
            let switched = (versions ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            _ = try await client.call { try await $0.setKillSwitch(body: .json(.init(versions: switched, enabled: clear, reason: reason))) }
            server.confirm(client, or: "Done.")
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
            let client = try server.client()
            _ = try await client.call { try await $0.emergencyRevoke(body: .json(.init(version: ver, force_refresh_ttl: forceRefreshTtl))) }
            server.confirm(client, or: "Revoked.")
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
            let client = try server.client()
            let stored = try await ManagementClient.$blobContentType.withValue(contentType) {
                try await client.call { try await $0.putBlob(path: .init(key: key), body: .binary(HTTPBody(data))).ok.body.json }
            }
            if server.printedReply(of: client) { return }
            Console.current.out("\(stored.message) SHA-256 \(stored.blob.sha256).")
        }
    }
}
