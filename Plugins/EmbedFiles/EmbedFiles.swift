import Foundation
import PackagePlugin

/// Embeds a service's source documents in its executable at build time, so they are edited in one
/// place and nothing generated is committed:
///
/// - `../openapi.yaml` beside a service's target becomes `OpenAPIDocument.json` (the document as
///   JSON, served at `GET /openapi.json`);
/// - each file in the target's `Dashboard/Assets/` becomes a member of `DashboardAssets`, named
///   after the file (`index.html` → `indexHTML`).
///
/// Embedding (not a resource bundle) keeps each service one self-contained executable: the release
/// image copies only the binaries, and no service can start without its document.
@main
struct EmbedFiles: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        guard let target = target as? SwiftSourceModuleTarget else { return [] }
        let tool = try context.tool(named: "EmbedFilesTool").url
        let output = context.pluginWorkDirectoryURL
        var commands: [Command] = []

        let document = target.directoryURL.deletingLastPathComponent().appending(path: "openapi.yaml")
        if FileManager.default.fileExists(atPath: document.path) {
            let swift = output.appending(path: "OpenAPIDocument.swift")
            commands.append(.buildCommand(
                displayName: "Embedding \(target.name)'s OpenAPI document",
                executable: tool,
                arguments: [swift.path, "OpenAPIDocument", "json=\(document.path)"],
                inputFiles: [document],
                outputFiles: [swift]))
        }

        let assets = target.directoryURL.appending(path: "Dashboard/Assets")
        if let names = try? FileManager.default.contentsOfDirectory(atPath: assets.path), !names.isEmpty {
            let files = names.sorted().map { assets.appending(path: $0) }
            let swift = output.appending(path: "DashboardAssets.swift")
            commands.append(.buildCommand(
                displayName: "Embedding \(target.name)'s dashboard assets",
                executable: tool,
                arguments: [swift.path, "DashboardAssets"] + files.map { "\(Self.memberName($0.lastPathComponent))=\($0.path)" },
                inputFiles: files,
                outputFiles: [swift]))
        }
        return commands
    }

    /// `index.html` → `indexHTML`, `app.js` → `appJS`.
    static func memberName(_ file: String) -> String {
        let parts = file.split(separator: ".")
        guard let base = parts.first else { return file }
        return base.replacingOccurrences(of: "-", with: "_") + parts.dropFirst().map { $0.uppercased() }.joined()
    }
}
