import ConfigSchema
import Foundation
import SesameDomain
import SesameJSON
import Testing

/// The JSON-Schema-Test-Suite's draft 2020-12 cases for every keyword Sesame supports (copied into
/// `Suite/` from github.com/json-schema-org/JSON-Schema-Test-Suite, MIT licence). A group whose
/// schema uses a keyword Sesame does not enforce must be refused when the schema is made; every
/// other group's every case must agree with the suite.
@Suite("Config schemas: the official JSON Schema test suite")
struct OfficialSuiteTests {
    static let files = [
        "type", "properties", "required", "additionalProperties", "items", "enum", "const", "minimum", "maximum", "exclusiveMinimum",
        "exclusiveMaximum", "minLength", "maxLength", "pattern", "ref", "boolean_schema",
    ]

    struct Group: Decodable {
        let description: String
        let schema: JSONValue
        let tests: [Case]
    }

    struct Case: Decodable {
        let description: String
        let data: JSONValue
        let valid: Bool
    }

    /// Whether `schema` reaches outside what Sesame supports, judged independently of the validator:
    /// an unsupported keyword anywhere, a reference to another document, or a nested `$id`.
    static func outsideSupport(_ value: JSONValue, root: Bool = true) -> Bool {
        switch value {
        case .object(let members):
            for (key, member) in members {
                if ConfigSchema.unsupportedKeywords.contains(key) { return true }
                if key == "$ref", case .string(let reference) = member, !reference.hasPrefix("#") { return true }
                if key == "$id", !root { return true }
                if outsideSupport(member, root: false) { return true }
            }
            return false
        case .array(let elements):
            return elements.contains { outsideSupport($0, root: false) }
        default:
            return false
        }
    }

    static func groups(_ file: String) throws -> [Group] {
        let url = try #require(Bundle.module.url(forResource: file, withExtension: "json", subdirectory: "Suite"))
        return try JSONDecoder().decode([Group].self, from: Data(contentsOf: url))
    }

    @Test("every case of the supported keywords agrees with the suite", arguments: files)
    func file(_ file: String) throws {
        var (ran, refused) = (0, 0)
        for group in try Self.groups(file) {
            if Self.outsideSupport(group.schema) {
                #expect(throws: ConfigSchema.Refusal.self, "\(file): \(group.description) should be refused") { try ConfigSchema(group.schema) }
                refused += 1
                continue
            }
            let schema: ConfigSchema
            do {
                schema = try ConfigSchema(group.schema)
            } catch {
                Issue.record("\(file): \(group.description): refused a supported schema: \(error)")
                continue
            }
            for test in group.tests {
                let violations = try schema.validate(test.data)
                #expect(violations.isEmpty == test.valid, "\(file): \(group.description) / \(test.description): \(violations)")
                ran += 1
            }
        }
        // Most of each file's groups are in reach: a validator that refused everything would pass the loop above.
        #expect(ran >= 4, "\(file): only \(ran) cases ran (\(refused) groups refused)")
    }

    @Test("the suite's cases, counted: most run, the rest are refused schemas")
    func coverage() throws {
        var (ran, refusedGroups, groups) = (0, 0, 0)
        for file in Self.files {
            for group in try Self.groups(file) {
                groups += 1
                if Self.outsideSupport(group.schema) { refusedGroups += 1 } else { ran += group.tests.count }
            }
        }
        #expect(ran >= 250 && refusedGroups * 3 < groups, "\(ran) cases ran; \(refusedGroups) of \(groups) groups outside the supported keywords")
    }
}
