import ConfigSchema
import Foundation
import SesameDomain
import SesameJSON
import SesameTestSupport
import Testing

/// Generated schemas and configs, judged by Sesame's validator and by PyPI's `jsonschema` (the
/// reference implementation in Python): every verdict must agree.
@Suite("Config schemas: agreement with jsonschema on generated documents")
struct OracleTests {
    static let names = ["a", "b", "c", "d"]
    static let patterns = ["^a", "b+", "^[a-c]*$", "[0-9]", "x|y", "^$"]

    static func text(_ random: inout SplitMix64) -> String {
        String((0..<Int.random(in: 0...6, using: &random)).map { _ in "abcxy09".randomElement(using: &random)! })
    }

    static func number(_ random: inout SplitMix64) -> JSONValue {
        Bool.random(using: &random) ? .integer(Int64.random(in: -4...4, using: &random)) : .number(Double(Int.random(in: -8...8, using: &random)) / 2)
    }

    static func anyValue(_ random: inout SplitMix64, depth: Int) -> JSONValue {
        switch Int.random(in: 0..<(depth > 1 ? 5 : 7), using: &random) {
        case 0: .null
        case 1: .bool(Bool.random(using: &random))
        case 2: number(&random)
        case 3, 4: .string(text(&random))
        case 5: .array((0..<Int.random(in: 0...3, using: &random)).map { _ in anyValue(&random, depth: depth + 1) })
        default:
            .object(Dictionary(uniqueKeysWithValues: names.shuffled(using: &random).prefix(Int.random(in: 0...3, using: &random)).map {
                ($0, anyValue(&random, depth: depth + 1))
            }))
        }
    }

    static func schema(_ random: inout SplitMix64, depth: Int, definitions: inout [String: JSONValue]) -> JSONValue {
        if depth > 0, Int.random(in: 0..<12, using: &random) == 0 { return .bool(Bool.random(using: &random)) }
        if depth > 0, Int.random(in: 0..<8, using: &random) == 0 {
            let name = "d\(definitions.count)"
            definitions[name] = .null  // reserved, so a nested definition gets another name
            definitions[name] = schema(&random, depth: depth + 1, definitions: &definitions)
            return .object(["$ref": .string("#/$defs/\(name)")])
        }
        var keywords: [String: JSONValue] = [:]
        let types = ["object", "array", "string", "number", "integer", "boolean", "null"]
        let kind = depth > 2 ? ["string", "number", "integer", "boolean"].randomElement(using: &random)! : types.randomElement(using: &random)!
        switch Int.random(in: 0..<10, using: &random) {
        case 0: break  // untyped: the other keywords apply to whatever comes
        case 1: keywords["type"] = .array([.string(kind), .string(types.randomElement(using: &random)!)])
        default: keywords["type"] = .string(kind)
        }
        switch kind {
        case "string":
            if Bool.random(using: &random) { keywords["minLength"] = .integer(Int64.random(in: 0...3, using: &random)) }
            if Bool.random(using: &random) { keywords["maxLength"] = .integer(Int64.random(in: 0...5, using: &random)) }
            if Bool.random(using: &random) { keywords["pattern"] = .string(patterns.randomElement(using: &random)!) }
        case "number", "integer":
            for keyword in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] where Int.random(in: 0..<3, using: &random) == 0 {
                keywords[keyword] = number(&random)
            }
        case "object":
            let declared = names.shuffled(using: &random).prefix(Int.random(in: 0...3, using: &random))
            if !declared.isEmpty {
                keywords["properties"] = .object(Dictionary(uniqueKeysWithValues: declared.map { ($0, schema(&random, depth: depth + 1, definitions: &definitions)) }))
            }
            let required = names.filter { _ in Int.random(in: 0..<3, using: &random) == 0 }
            if !required.isEmpty { keywords["required"] = .array(required.map { .string($0) }) }
            switch Int.random(in: 0..<4, using: &random) {
            case 0: keywords["additionalProperties"] = .bool(false)
            case 1: keywords["additionalProperties"] = schema(&random, depth: depth + 1, definitions: &definitions)
            default: break
            }
        case "array":
            if Int.random(in: 0..<4, using: &random) != 0 { keywords["items"] = schema(&random, depth: depth + 1, definitions: &definitions) }
        default:
            break
        }
        switch Int.random(in: 0..<12, using: &random) {
        case 0: keywords["enum"] = .array((0..<Int.random(in: 1...3, using: &random)).map { _ in anyValue(&random, depth: 2) })
        case 1: keywords["const"] = anyValue(&random, depth: 2)
        default: break
        }
        return .object(keywords)
    }

    /// A value shaped like `schema` wants (often valid, sometimes a near miss), or any value.
    static func instance(for schema: JSONValue, root: JSONValue, _ random: inout SplitMix64, depth: Int) -> JSONValue {
        guard depth < 5, Int.random(in: 0..<6, using: &random) != 0, case .object(let keywords) = schema else {
            return anyValue(&random, depth: 1)
        }
        if case .string(let reference)? = keywords["$ref"], case .object(let definitions)? = root.objectMember("$defs"),
            let target = definitions[String(reference.dropFirst("#/$defs/".count))]
        {
            return instance(for: target, root: root, &random, depth: depth + 1)
        }
        if case .array(let values)? = keywords["enum"], let value = values.randomElement(using: &random) { return value }
        if let constant = keywords["const"] { return constant }
        let type: String
        switch keywords["type"] {
        case .string(let name)?: type = name
        case .array(let names)?: if case .string(let name)? = names.first { type = name } else { type = "null" }
        default: return anyValue(&random, depth: 1)
        }
        switch type {
        case "string": return .string(text(&random))
        case "number", "integer": return Bool.random(using: &random) ? .integer(Int64.random(in: -4...4, using: &random)) : number(&random)
        case "boolean": return .bool(Bool.random(using: &random))
        case "null": return .null
        case "array":
            let items = keywords["items"] ?? .bool(true)
            return .array((0..<Int.random(in: 0...3, using: &random)).map { _ in instance(for: items, root: root, &random, depth: depth + 1) })
        default:
            var members: [String: JSONValue] = [:]
            if case .object(let properties)? = keywords["properties"] {
                for (name, property) in properties where Int.random(in: 0..<4, using: &random) != 0 {
                    members[name] = instance(for: property, root: root, &random, depth: depth + 1)
                }
            }
            if Int.random(in: 0..<4, using: &random) == 0 { members[names.randomElement(using: &random)!] = anyValue(&random, depth: 2) }
            return .object(members)
        }
    }

    @Test("2,000 generated schema and config pairs: the same verdict as jsonschema, valid and invalid both common")
    func agreement() throws {
        // Seeded: the same documents on every run, so a disagreement can be reproduced.
        var random = SplitMix64(seed: 20_261_126)
        var pairs: [(schema: JSONValue, instance: JSONValue)] = []
        for _ in 0..<2_000 {
            var definitions: [String: JSONValue] = [:]
            var schema = Self.schema(&random, depth: 0, definitions: &definitions)
            if !definitions.isEmpty, case .object(var keywords) = schema {
                keywords["$defs"] = .object(definitions)
                schema = .object(keywords)
            }
            pairs.append((schema, Self.instance(for: schema, root: schema, &random, depth: 0)))
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sesame-schema-oracle-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        let document: [[String: JSONValue]] = pairs.map { ["schema": $0.schema, "instance": $0.instance] }
        try JSONEncoder().encode(document).write(to: file)

        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("oracle.py").path
        let (status, output) = try TestPython.run(script, [file.path])
        #expect(status == 0, "oracle.py failed (is jsonschema installed?)")
        let verdicts = Array(output)
        try #require(verdicts.count == pairs.count, "oracle.py gave \(verdicts.count) verdicts for \(pairs.count) pairs")

        var (valid, disagreements) = (0, [String]())
        for (pair, verdict) in zip(pairs, verdicts) {
            let violations = try ConfigSchema(pair.schema).validate(pair.instance)
            if verdict == "1" { valid += 1 }
            if violations.isEmpty != (verdict == "1") {
                disagreements.append("schema \(ConfigSchemaRender.json(pair.schema)) instance \(ConfigSchemaRender.json(pair.instance)): jsonschema \(verdict), Sesame \(violations)")
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.count) disagreements, first: \(disagreements.prefix(3).joined(separator: "\n"))")
        #expect(valid > pairs.count / 5 && valid < pairs.count * 4 / 5, "\(valid) of \(pairs.count) valid: the generator should make both common")
    }
}

enum ConfigSchemaRender {
    static func json(_ value: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "?"
    }
}

extension JSONValue {
    func objectMember(_ name: String) -> JSONValue? {
        if case .object(let members) = self { members[name] } else { nil }
    }
}
