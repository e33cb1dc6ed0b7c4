import Foundation
import Yams

/// Writes a Swift file that holds text files as string constants, so what a service serves from
/// them (its OpenAPI document, the dashboard's page) ships inside its executable and the files stay
/// the only source. The `EmbedFiles` build-tool plugin runs it on every build that changes a file.
///
///     EmbedFilesTool OUTPUT.swift ENUM MEMBER=FILE [MEMBER=FILE ...]
///
/// A `.yaml` file is embedded as JSON (keys sorted, so the output is stable).
@main
struct EmbedFilesTool {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        guard arguments.count >= 3, let output = arguments.first else {
            fail("usage: EmbedFilesTool OUTPUT.swift ENUM MEMBER=FILE [MEMBER=FILE ...]")
        }
        let enumName = arguments[arguments.startIndex + 1]
        var lines = ["// Generated at build time by the EmbedFiles plugin: edit the files named below.", "", "enum \(enumName) {"]
        for pair in arguments.dropFirst(2) {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { fail("not MEMBER=FILE: \(pair)") }
            let text: String
            do {
                text = try embeddedText(of: URL(fileURLWithPath: parts[1]))
            } catch {
                fail("\(parts[1]): \(error)")
            }
            lines += ["    /// \(URL(fileURLWithPath: parts[1]).lastPathComponent)", "    static let \(parts[0]) = \(rawStringLiteral(text))", ""]
        }
        lines[lines.count - 1] = "}"
        do {
            try (lines.joined(separator: "\n") + "\n").write(toFile: output, atomically: true, encoding: .utf8)
        } catch {
            fail("\(output): \(error)")
        }
    }

    static func embeddedText(of file: URL) throws -> String {
        let text = try String(contentsOf: file, encoding: .utf8)
        guard file.pathExtension == "yaml" else { return text }
        let document = try jsonValue(Yams.load(yaml: text) as Any)
        let json = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        return String(decoding: json, as: UTF8.self)
    }

    /// What JSON can hold of a YAML value: mapping keys become strings (`200:` is `"200"`, as
    /// OpenAPI means it), and anything JSON has no form for (a timestamp) is refused.
    static func jsonValue(_ value: Any) throws -> Any {
        switch value {
        case let mapping as [AnyHashable: Any]:
            var object: [String: Any] = [:]
            for (key, item) in mapping { object["\(key.base)"] = try jsonValue(item) }
            return object
        case let sequence as [Any]:
            return try sequence.map(jsonValue)
        case is String, is Bool, is Int, is Double, is NSNull:
            return value
        case Optional<Any>.none:
            return NSNull()
        default:
            throw EmbedError(description: "no JSON form for the YAML value \(value) (\(type(of: value)))")
        }
    }

    /// A multi-line raw string literal with enough `#`s that nothing in the text ends it or
    /// interpolates.
    static func rawStringLiteral(_ text: String) -> String {
        var hashes = "#"
        while text.contains("\"\"\"" + hashes) || text.contains("\\" + hashes) { hashes += "#" }
        let body = text.hasSuffix("\n") ? String(text.dropLast()) : text
        return "\(hashes)\"\"\"\n\(body)\n\"\"\"\(hashes)"
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("EmbedFilesTool: \(message)\n".utf8))
        exit(1)
    }
}

struct EmbedError: Error, CustomStringConvertible {
    let description: String
}
