import ArgumentParser
import ConfigSchema
import Foundation
import OpenAPIRuntime
import SesameDomain
import SesameJSON

/// Reads a JSON file as a `JSONValue`.
func readJSON(_ path: String) throws(CLIFailure) -> JSONValue {
    do {
        return try JSONDecoder().decode(JSONValue.self, from: try readFile(path))
    } catch let failure as CLIFailure {
        throw failure
    } catch {
        throw CLIFailure("\(path) is not JSON", exitCode: 2)
    }
}

/// Every violation of `config` against `schemas` (documents), as the server would list them;
/// fails when a schema cannot be used.
func violations(of config: JSONValue, against schemas: [(scope: String, document: JSONValue)]) throws(CLIFailure) -> [String] {
    var lines: [String] = []
    for (scope, document) in schemas {
        let schema: ConfigSchema
        do {
            schema = try ConfigSchema(document)
        } catch {
            throw CLIFailure("the schema of \(scope) cannot be used: \(error)", exitCode: 2)
        }
        do {
            lines += try schema.validate(config).map { "\($0.path.isEmpty ? "(the config)" : $0.path): \($0.message) [\($0.keyword), \(scope)]" }
        } catch {
            throw CLIFailure("the schema of \(scope) is too costly to check against this config: \(error)", exitCode: 2)
        }
    }
    return lines
}

/// The schemas the server attaches to pattern `version` (the app's and the pattern's own).
func attachedSchemas(_ server: ServerOptions, version: String) async throws(CLIFailure) -> [(scope: String, document: JSONValue)] {
    let schemas = try await server.client().call { try await $0.getConfigSchemas(query: .init(version: version)).ok.body.json.schemas }
    return schemas.map { entry in
        (entry.pattern.map { "pattern '\($0)'" } ?? "the app", entry.schema)
    }
}

/// Checks `file` against the schema in `schemaFile` (offline) and those the server attaches to
/// `version`; prints each violation and fails (exit 1) when there is one. Returns the scopes checked.
@discardableResult
func requireMatch(_ file: String, schemaFile: String?, version: String?, server: ServerOptions, failure: String) async throws(CLIFailure) -> [String] {
    var schemas: [(scope: String, document: JSONValue)] = []
    if let schemaFile { schemas.append((schemaFile, try readJSON(schemaFile))) }
    if let version { schemas += try await attachedSchemas(server, version: version) }
    let found = try violations(of: try readJSON(file), against: schemas)
    guard found.isEmpty else {
        Console.current.out(found.joined(separator: "\n"))
        throw CLIFailure("\(file) does not match its schema (\(found.count) violation\(found.count == 1 ? "" : "s"))\(failure)", exitCode: 1)
    }
    return schemas.map(\.scope)
}

/// `sesame config validate`.
struct ConfigValidateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check a config file against a JSON Schema: a local one (--schema, offline) or the ones the server attaches to --ver.",
        discussion: """
            Sesame supports the JSON Schema (draft 2020-12) keywords configs need: type, properties, required, \
            additionalProperties, items, enum, const, minimum, maximum, exclusiveMinimum, exclusiveMaximum, \
            minLength, maxLength, pattern, and $ref within the schema. Exit status 1 when the config does not match.
            """)

    @Argument(help: "The JSON config file.") var file: String
    @Option(help: "A JSON Schema file to check against, offline.") var schema: String?
    @Option(help: "Check against the schemas the server attaches to this version pattern.") var ver: String?
    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await reportingFailures {
            guard schema != nil || ver != nil else { throw CLIFailure("name a schema: --schema FILE (offline) or --ver PATTERN (the server's)", exitCode: 2) }
            let scopes = try await requireMatch(file, schemaFile: schema, version: ver, server: server, failure: "")
            Console.current.out(scopes.isEmpty ? "No schema applies to \(ver ?? "it"): \(file) is accepted as is." : "\(file) matches \(scopes.joined(separator: " and ")).")
        }
    }
}

/// `sesame config schema set|show|remove`.
struct ConfigSchemaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema", abstract: "Attach, show or detach the JSON Schema configs must match before they are published.",
        subcommands: [Set.self, Show.self, Remove.self])

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set", abstract: "Attach a JSON Schema to a version pattern (--ver) or to every pattern; refused if a published config would not match it.")
        @Option(help: "The JSON Schema file.") var file: String
        @Option(help: "The version pattern; every pattern of the app when omitted.") var ver: String?
        @OptionGroup var server: ServerOptions

        func run() async throws {
            try await reportingFailures {
                guard let schema = try? JSONDecoder().decode(JSONValue.self, from: try readFile(file)) else {
                    throw CLIFailure("\(file) is not JSON", exitCode: 2)
                }
                let client = try server.client()
                _ = try await client.call { try await $0.attachConfigSchema(body: .json(.init(version: ver, schema: schema))) }
                server.confirm(client, or: "-")
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "show", abstract: "Print the schemas attached (to --ver and the app, or all).")
        @Option(help: "Only the schemas that apply to this version pattern.") var ver: String?
        @OptionGroup var server: ServerOptions

        func run() async throws {
            try await reportingFailures {
                let client = try server.client()
                let schemas = try await client.call { try await $0.getConfigSchemas(query: .init(version: ver)).ok.body.json.schemas }
                if server.printedReply(of: client) { return }
                guard !schemas.isEmpty else { return Console.current.out("No schema is attached.") }
                for entry in schemas {
                    let scope = entry.pattern.map { "Pattern '\($0)'" } ?? "Every pattern"
                    Console.current.out("\(scope) (by \(entry.updatedBy), \(text(entry.updatedAt))):\n\(JSONDisplay.describe(entry.schema, pretty: true))")
                }
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Detach the schema of a version pattern (--ver) or the app's.")
        @Option(help: "The version pattern; the app's own schema when omitted.") var ver: String?
        @OptionGroup var server: ServerOptions

        func run() async throws {
            try await reportingFailures {
                let client = try server.client()
                _ = try await client.call { try await $0.detachConfigSchema(query: .init(version: ver)) }
                server.confirm(client, or: "-")
            }
        }
    }
}
