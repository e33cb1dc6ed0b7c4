import ConfigSchema
import Foundation
import SesameDomain
import SesameJSON
import Testing

/// Schemas an app member could attach to cost the admin service hours or its stack: each one must
/// end in `TooComplex` within the budget's time, never a crash or a pinned core.
@Suite("Config schemas: one validation's cost is bounded")
struct ValidationBudgetTests {
    /// Runs `body`, returning its outcome and how long it took.
    static func timed<T>(_ body: () throws -> T) rethrows -> (T, Duration) {
        let start = ContinuousClock.now
        let outcome = try body()
        return (outcome, ContinuousClock.now - start)
    }

    static func tooComplex(_ schema: ConfigSchema, _ instance: JSONValue) -> (ConfigSchema.TooComplex?, Duration) {
        timed { () -> ConfigSchema.TooComplex? in
            do throws(ConfigSchema.TooComplex) {
                _ = try schema.validate(instance)
                return nil
            } catch {
                return error
            }
        }
    }

    /// A config nested `depth` levels: {"a": {"a": … true}}.
    static func nested(_ depth: Int) -> JSONValue {
        (0..<depth).reduce(JSONValue.bool(true)) { inner, _ in .object(["a": inner]) }
    }

    @Test("a chain of definitions that fans out at every level (2^40 steps unbounded) stops at the step or time budget")
    func exponentialReferences() throws {
        // Each definition applies the next to the value itself and to each member: the work doubles per definition.
        var definitions: [String: JSONValue] = ["d40": .bool(true)]
        for index in 0..<40 {
            let next = JSONValue.object(["$ref": .string("#/$defs/d\(index + 1)")])
            definitions["d\(index)"] = .object(["$ref": .string("#/$defs/d\(index + 1)"), "additionalProperties": next])
        }
        let schema = try ConfigSchema(.object(["$defs": .object(definitions), "$ref": .string("#/$defs/d0")]))
        let (refusal, elapsed) = Self.tooComplex(schema, Self.nested(12))
        #expect(refusal != nil, "an exponential check completed")
        #expect(elapsed < .seconds(2), "took \(elapsed)")
    }

    @Test("a 500-deep config against an 8-link self-referencing chain is refused at the nesting limit, not by a stack overflow")
    func deepNesting() throws {
        var definitions: [String: JSONValue] = [:]
        for index in 0..<7 { definitions["d\(index)"] = .object(["$ref": .string("#/$defs/d\(index + 1)")]) }
        definitions["d7"] = .object(["additionalProperties": .object(["$ref": .string("#/$defs/d0")])])
        let schema = try ConfigSchema(.object(["$defs": .object(definitions), "$ref": .string("#/$defs/d0")]))
        let (refusal, _) = Self.tooComplex(schema, Self.nested(500))
        #expect(refusal?.reason.contains("nest more than \(ValidationBudget.maxNesting)") == true, "\(String(describing: refusal))")
        // A config within the limit is still checked.
        #expect(try schema.validate(Self.nested(10)).isEmpty)
    }

    @Test("catastrophic backtracking patterns, anchored and not, stop at the backtracking bound, never read as a mismatch", arguments: [
        ("^(\\w+\\s?)+$", String(repeating: "a", count: 40) + "!"),
        ("(a*)*b", String(repeating: "a", count: 41)),
    ])
    func backtrackingPatterns(pattern: String, text: String) throws {
        let schema = try ConfigSchema(.object(["properties": .object(["name": .object(["pattern": .string(pattern)])])]))
        let (refusal, elapsed) = Self.tooComplex(schema, .object(["name": .string(text)]))
        #expect(refusal?.reason.contains("pattern") == true, "\(String(describing: refusal))")
        #expect(elapsed < .seconds(2), "took \(elapsed)")
        // The same pattern on an ordinary value answers at once.
        #expect(try schema.validate(.object(["name": .string("aab")])).isEmpty)
    }

    @Test("a failing enum of 10,000 values names the first ten and the count, not every value")
    func hugeEnum() throws {
        let values = (0..<10_000).map { JSONValue.string("value-\($0)") }
        let schema = try ConfigSchema(.object(["enum": .array(values)]))
        let violations = try schema.validate(.string("other"))
        let message = try #require(violations.first?.message)
        #expect(message.contains("value-9") && !message.contains("value-10,") && message.contains("10000 values in all"), "\(message)")
        #expect(message.count < 400, "\(message.count) characters")
    }

    @Test("the step budget is reached by a wide config, and a smaller budget is honoured; ordinary configs fit well within the default")
    func stepBudget() throws {
        let schema = try ConfigSchema(.object(["items": .object(["properties": .object(["n": .object(["type": .string("integer")])])])]))
        let wide = JSONValue.array((0..<10_000).map { .object(["n": .integer(Int64($0))]) })
        #expect(try schema.validate(wide).isEmpty)
        #expect(throws: ConfigSchema.TooComplex.self) { try schema.validate(wide, budget: ValidationBudget(steps: 1_000)) }
        // One budget shared by two validations spends across both.
        let shared = ValidationBudget(steps: 30_000)
        #expect(try schema.validate(wide, budget: shared).isEmpty)
        #expect(throws: ConfigSchema.TooComplex.self) { try schema.validate(wide, budget: shared) }
    }
}
