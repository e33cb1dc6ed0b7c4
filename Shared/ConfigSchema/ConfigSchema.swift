import Foundation
import SesameDomain
import SesameJSON

/// A JSON Schema (draft 2020-12) that an app attaches to its configs, limited to the keywords
/// config validation needs: `type`, `properties`, `required`, `additionalProperties`, `items`,
/// `enum`, `const`, `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `minLength`,
/// `maxLength`, `pattern`, and `$ref` within the document (`#`, `#/$defs/…`, any JSON pointer).
/// Annotations (`title`, `description`, `default`, `format`, …) are accepted and ignored, as the
/// standard says. A schema that uses any other validation keyword is refused when it is made,
/// rather than silently not enforcing it.
public struct ConfigSchema: Sendable {
    /// The keywords this validator enforces.
    public static let supportedKeywords: Set<String> = [
        "type", "properties", "required", "additionalProperties", "items", "enum", "const", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern", "$ref", "$defs",
    ]
    /// Validation keywords of draft 2020-12 this validator does not enforce: a schema using one is refused.
    public static let unsupportedKeywords: Set<String> = [
        "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependentRequired", "prefixItems", "contains",
        "minContains", "maxContains", "patternProperties", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "minItems",
        "maxItems", "uniqueItems", "minProperties", "maxProperties", "multipleOf", "$dynamicRef", "$dynamicAnchor", "$anchor",
        "$recursiveRef", "$recursiveAnchor", "definitions", "dependencies",
    ]
    /// At most this many violations are reported (the first ones, in document order).
    public static let maxViolations = 100
    /// At most this many values of a failing `enum` are named in its message.
    public static let maxEnumValuesShown = 10

    /// Why a schema cannot be used.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// Where in the schema, as a JSON pointer.
        public let path: String
        public let problem: String
        public var description: String { "\(path.isEmpty ? "the schema" : path): \(problem)" }
    }

    /// One way a config fails the schema.
    public struct Violation: Sendable, Equatable, Codable {
        /// Where in the config, as a JSON pointer (`""` is the whole config).
        public let path: String
        /// The schema keyword that failed.
        public let keyword: String
        public let message: String

        public init(path: String, keyword: String, message: String) {
            self.path = path
            self.keyword = keyword
            self.message = message
        }
    }

    public let document: JSONValue
    private let patterns: [String: CompiledPattern]

    /// Checks `document` once: every keyword well-formed and supported, every `$ref` resolvable,
    /// every `pattern` a regular expression.
    public init(_ document: JSONValue) throws(Refusal) {
        self.document = document
        var patterns: [String: CompiledPattern] = [:]
        try Self.check(document, at: "", root: document, patterns: &patterns)
        self.patterns = patterns
    }

    /// Every violation of `instance`, in document order (at most `maxViolations`); empty when it
    /// conforms. Throws `TooComplex` when the check would cost more than `budget` allows.
    public func validate(_ instance: JSONValue, budget: ValidationBudget = ValidationBudget()) throws(TooComplex) -> [Violation] {
        var violations: [Violation] = []
        try validate(instance, against: document, at: "", nesting: 0, references: 0, budget: budget, into: &violations)
        return violations
    }

    // MARK: Validation

    // Recursive, but never deeper than `ValidationBudget.maxNesting` frames: each frame is a level of
    // the config or a `$ref` followed, and both count.
    private func validate(
        _ instance: JSONValue, against schema: JSONValue, at path: String, nesting: Int, references: Int, budget: ValidationBudget,
        into violations: inout [Violation]
    ) throws(TooComplex) {
        func fail(_ keyword: String, _ message: String) {
            if violations.count < Self.maxViolations { violations.append(Violation(path: path, keyword: keyword, message: message)) }
        }
        guard violations.count < Self.maxViolations else { return }
        guard nesting < ValidationBudget.maxNesting else {
            throw TooComplex("the config and the schema's references nest more than \(ValidationBudget.maxNesting) levels deep at \(path.isEmpty ? "the config" : path)")
        }
        try budget.spend(1)
        switch schema {
        case .bool(true): return
        case .bool(false): return fail("false", "is not allowed here")
        case .object(let keywords):
            if case .string(let reference)? = keywords["$ref"] {
                // `check` resolved every reference; a chain of references that never reaches the
                // config's next level is a loop.
                guard references < 64, let target = Self.resolve(reference, in: document) else {
                    return fail("$ref", "the schema's references loop without end at \(reference)")
                }
                try validate(instance, against: target, at: path, nesting: nesting + 1, references: references + 1, budget: budget, into: &violations)
            }
            if case .array(let types)? = keywords["type"] {
                let names = types.compactMap { if case .string(let name) = $0 { name } else { nil } }
                if !names.contains(where: { Self.instance(instance, isOfType: $0) }) {
                    fail("type", "must be \(names.map(Self.article).joined(separator: " or ")), not \(Self.describe(instance))")
                }
            } else if case .string(let name)? = keywords["type"], !Self.instance(instance, isOfType: name) {
                fail("type", "must be \(Self.article(name)), not \(Self.describe(instance))")
            }
            if case .array(let allowed)? = keywords["enum"] {
                try budget.spend(allowed.count)
                if !allowed.contains(where: { Self.equal($0, instance) }) {
                    let shown = allowed.prefix(Self.maxEnumValuesShown).map(Self.render).joined(separator: ", ")
                    let rest = allowed.count > Self.maxEnumValuesShown ? ", … (\(allowed.count) values in all)" : ""
                    fail("enum", "must be one of \(shown)\(rest)")
                }
            }
            if let constant = keywords["const"], !Self.equal(constant, instance) {
                fail("const", "must be \(Self.render(constant))")
            }
            if let number = instance.doubleValue {
                let bounds: [(keyword: String, holds: (Double, Double) -> Bool, wording: String)] = [
                    ("minimum", (>=), "at least"), ("maximum", (<=), "at most"),
                    ("exclusiveMinimum", (>), "more than"), ("exclusiveMaximum", (<), "less than"),
                ]
                for bound in bounds {
                    if let limit = keywords[bound.keyword], let value = limit.doubleValue, !bound.holds(number, value) {
                        fail(bound.keyword, "must be \(bound.wording) \(Self.render(limit))")
                    }
                }
            }
            if case .string(let text) = instance {
                // Lengths count code points, as the standard does (not UTF-16 units or bytes).
                let length = text.unicodeScalars.count
                if let minimum = keywords["minLength"].flatMap(Self.count), length < minimum { fail("minLength", "must be at least \(minimum) characters long") }
                if let maximum = keywords["maxLength"].flatMap(Self.count), length > maximum { fail("maxLength", "must be at most \(maximum) characters long") }
                if case .string(let source)? = keywords["pattern"], let expression = patterns[source] {
                    try budget.spend(1)
                    if try !expression.matches(text, before: budget.deadline) { fail("pattern", "must match the pattern \(source)") }
                }
            }
            if case .object(let members) = instance {
                if case .array(let required)? = keywords["required"] {
                    try budget.spend(required.count)
                    for case .string(let name) in required where members[name] == nil {
                        fail("required", "must have the member \"\(name)\"")
                    }
                }
                let properties: [String: JSONValue]
                if case .object(let declared)? = keywords["properties"] { properties = declared } else { properties = [:] }
                for (name, member) in members.sorted(by: { $0.key < $1.key }) {
                    let memberPath = path + "/" + Self.escape(name)
                    if let schema = properties[name] {
                        try validate(member, against: schema, at: memberPath, nesting: nesting + 1, references: 0, budget: budget, into: &violations)
                    } else if let additional = keywords["additionalProperties"] {
                        if case .bool(false) = additional {
                            if violations.count < Self.maxViolations {
                                violations.append(Violation(path: memberPath, keyword: "additionalProperties", message: "is not a member the schema allows"))
                            }
                        } else {
                            try validate(member, against: additional, at: memberPath, nesting: nesting + 1, references: 0, budget: budget, into: &violations)
                        }
                    }
                }
            }
            if case .array(let elements) = instance, let items = keywords["items"] {
                for (index, element) in elements.enumerated() {
                    try validate(element, against: items, at: path + "/\(index)", nesting: nesting + 1, references: 0, budget: budget, into: &violations)
                }
            }
        default:
            return  // `check` refused every other kind of schema
        }
    }

    // MARK: Checking the schema

    private static let annotations: Set<String> = [
        "$schema", "$id", "$comment", "$vocabulary", "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
        "format", "contentEncoding", "contentMediaType", "contentSchema",
    ]
    private static let typeNames: Set<String> = ["null", "boolean", "object", "array", "number", "integer", "string"]

    private static func check(_ schema: JSONValue, at path: String, root: JSONValue, patterns: inout [String: CompiledPattern]) throws(Refusal) {
        func refuse(_ keyword: String?, _ problem: String) -> Refusal {
            Refusal(path: keyword.map { path + "/" + escape($0) } ?? path, problem: problem)
        }
        guard case .object(let keywords) = schema else {
            if case .bool = schema { return }
            throw refuse(nil, "must be a schema: a JSON object, or true or false")
        }
        for (keyword, value) in keywords.sorted(by: { $0.key < $1.key }) {
            if unsupportedKeywords.contains(keyword) {
                throw refuse(keyword, "is a JSON Schema keyword Sesame does not enforce; it supports \(supportedKeywords.sorted().joined(separator: ", "))")
            }
            switch keyword {
            case "type":
                let names: [JSONValue]
                if case .array(let list) = value { names = list } else { names = [value] }
                guard !names.isEmpty, names.allSatisfy({ if case .string(let name) = $0 { typeNames.contains(name) } else { false } }) else {
                    throw refuse(keyword, "must be one of \(typeNames.sorted().joined(separator: ", ")), or a list of them")
                }
            case "properties", "$defs":
                guard case .object(let members) = value else { throw refuse(keyword, "must be an object of schemas") }
                for (name, member) in members.sorted(by: { $0.key < $1.key }) {
                    try check(member, at: path + "/" + escape(keyword) + "/" + escape(name), root: root, patterns: &patterns)
                }
            case "additionalProperties", "items":
                try check(value, at: path + "/" + keyword, root: root, patterns: &patterns)
            case "required":
                guard case .array(let names) = value, names.allSatisfy({ if case .string = $0 { true } else { false } }) else {
                    throw refuse(keyword, "must be a list of member names")
                }
            case "enum":
                guard case .array = value else { throw refuse(keyword, "must be a list of values") }
            case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
                guard value.doubleValue != nil else { throw refuse(keyword, "must be a number") }
            case "minLength", "maxLength":
                guard count(value) != nil else { throw refuse(keyword, "must be a non-negative integer") }
            case "pattern":
                guard case .string(let source) = value, let expression = CompiledPattern(source) else {
                    throw refuse(keyword, "must be a regular expression")
                }
                patterns[source] = expression
            case "$id" where !path.isEmpty:
                // A nested `$id` moves the base that references resolve against; Sesame resolves from the root only.
                throw refuse(keyword, "is allowed only at the schema's root")
            case "$ref":
                guard case .string(let reference) = value, resolve(reference, in: root) != nil else {
                    throw refuse(keyword, "must point into this schema (\"#\", \"#/$defs/name\"): other documents are not fetched")
                }
            default:
                continue  // `const`, annotations, and keywords no vocabulary defines (ignored, as the standard says)
            }
        }
    }

    /// The subschema `reference` names within `root`: `#` or `#` and a JSON pointer.
    static func resolve(_ reference: String, in root: JSONValue) -> JSONValue? {
        guard reference.hasPrefix("#") else { return nil }
        let pointer = String(reference.dropFirst()).removingPercentEncoding ?? ""
        guard !pointer.isEmpty else { return root }
        guard pointer.hasPrefix("/") else { return nil }
        var node = root
        for token in pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            let key = token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            switch node {
            case .object(let members):
                guard let next = members[key] else { return nil }
                node = next
            case .array(let elements):
                guard let index = Int(key), elements.indices.contains(index) else { return nil }
                node = elements[index]
            default:
                return nil
            }
        }
        return node
    }

    // MARK: JSON values

    static func instance(_ value: JSONValue, isOfType name: String) -> Bool {
        switch (name, value) {
        case ("null", .null), ("boolean", .bool), ("object", .object), ("array", .array), ("string", .string): true
        case ("number", .integer), ("number", .number), ("integer", .integer): true
        // 1.0 is an integer: the standard types by value, not by spelling.
        case ("integer", .number(let number)): number.rounded() == number && number.isFinite
        default: false
        }
    }

    static func count(_ value: JSONValue) -> Int? {
        switch value {
        case .integer(let integer) where integer >= 0: Int(clamping: integer)
        case .number(let number) where number >= 0 && number.rounded() == number && number < 1e15: Int(number)
        default: nil
        }
    }

    /// JSON equality: numbers by value (1 equals 1.0), strings by code points, objects regardless of member order.
    static func equal(_ left: JSONValue, _ right: JSONValue) -> Bool {
        switch (left, right) {
        case (.integer(let a), .integer(let b)): a == b
        case (.integer, .number), (.number, .integer), (.number, .number): left.doubleValue == right.doubleValue
        // Code point by code point: Swift's `==` would call "é" and "e" + a combining accent equal.
        case (.string(let a), .string(let b)): a.unicodeScalars.elementsEqual(b.unicodeScalars)
        case (.array(let a), .array(let b)): a.count == b.count && zip(a, b).allSatisfy { equal($0, $1) }
        case (.object(let a), .object(let b)): a.count == b.count && a.allSatisfy { key, value in b[key].map { equal(value, $0) } ?? false }
        default: left == right
        }
    }

    static func describe(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .integer, .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    static func article(_ type: String) -> String {
        switch type {
        case "null": "null"
        case "array", "object", "integer": "an \(type)"
        default: "a \(type)"
        }
    }

    static func render(_ value: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let text = (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "?"
        return text.count > 80 ? String(text.prefix(77)) + "…" : text
    }

    /// A member name as a JSON pointer token.
    static func escape(_ name: String) -> String {
        name.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }
}

/// A compiled `pattern`: ECMA-262 in the standard; ICU's syntax (NSRegularExpression) agrees on
/// the common subset (classes, anchors, quantifiers, groups, alternation). Unanchored, as the
/// standard says: `pattern` matches when the expression is found anywhere in the string.
///
/// ICU backtracks, so a pattern such as `(a*)*b` can take exponential time; the match asks ICU to
/// report progress (every few thousand backtracking steps, about 5,000 reports a second here) and
/// stops after `maxProgressReports` of them or at the validation's deadline, whichever is first.
/// The count is the bound that holds on any machine: a deadline alone raced ICU's own give-up
/// (its backtracking stack's limit, reached after about 4,900 reports on `^(\w+\s?)+$`), which
/// swift-corelibs-foundation reports as "no match", not as an error.
final class CompiledPattern: @unchecked Sendable {
    /// Progress reports one match may take: about 0.2 s of backtracking on this project's machines.
    static let maxProgressReports = 1_000

    // NSRegularExpression is immutable once made and documented as safe to use from many threads.
    private let expression: NSRegularExpression

    init?(_ source: String) {
        guard let expression = try? NSRegularExpression(pattern: source) else { return nil }
        self.expression = expression
    }

    /// Whether the expression is found in `text`; throws when the search reaches `deadline` first.
    func matches(_ text: String, before deadline: ContinuousClock.Instant) throws(ConfigSchema.TooComplex) -> Bool {
        var found = false
        var outOfTime = false
        var reports = 0
        expression.enumerateMatches(in: text, options: [.reportProgress], range: NSRange(text.startIndex..., in: text)) { match, _, stop in
            reports += 1
            if match != nil {
                found = true
                stop.pointee = true
            } else if reports > Self.maxProgressReports || ContinuousClock.now >= deadline {
                outOfTime = true
                stop.pointee = true
            }
        }
        if outOfTime && !found { throw ConfigSchema.TooComplex("a pattern needed more backtracking than validation may spend") }
        return found
    }
}

extension ConfigSchema {
    /// A validation that would cost more than its budget: the schema is too complex for the config
    /// (`422 schema_too_complex`), not the config wrong.
    public struct TooComplex: Error, Sendable, Equatable, CustomStringConvertible {
        public let reason: String
        public init(_ reason: String) { self.reason = reason }
        public var description: String { reason }
    }
}

/// What one validation may cost: steps (a schema applied to a value, a value of an `enum` or
/// `required` list compared), time (a deadline, checked between steps and inside pattern matches),
/// and nesting (levels of the config plus `$ref`s followed, so the descent never exhausts a stack).
/// One budget may be shared by several validations that make up one request (a schema checked
/// against every published config).
public final class ValidationBudget {
    /// Steps one request may spend, by default.
    public static let defaultSteps = 1_000_000
    /// Time one request may spend, by default.
    public static let defaultTime: Duration = .seconds(1)
    /// The deepest the descent goes: levels of the config plus `$ref`s followed.
    public static let maxNesting = 128

    private let steps: Int
    private var remaining: Int
    let deadline: ContinuousClock.Instant

    public convenience init(steps: Int = ValidationBudget.defaultSteps, time: Duration = ValidationBudget.defaultTime) {
        self.init(steps: steps, deadline: ContinuousClock.now.advanced(by: time))
    }

    /// A budget whose time ends at `deadline`: set when the work was asked for, so time spent
    /// waiting for a thread counts too.
    public init(steps: Int = ValidationBudget.defaultSteps, deadline: ContinuousClock.Instant) {
        self.steps = steps
        remaining = steps
        self.deadline = deadline
    }

    func spend(_ steps: Int) throws(ConfigSchema.TooComplex) {
        let before = remaining
        remaining -= steps
        guard remaining >= 0 else { throw ConfigSchema.TooComplex("checking the config against the schema takes more than \(steps) steps") }
        // The clock is read every 1,024 steps, not at each.
        if before >> 10 != remaining >> 10, ContinuousClock.now >= deadline {
            throw ConfigSchema.TooComplex("checking the config against the schema takes longer than validation may take")
        }
    }
}
