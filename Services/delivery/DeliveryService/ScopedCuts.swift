import Foundation
import SesameDomain
import SesameJSON
import SesameScope
import Synchronization

/// The `scope` answers cut from one view of a config: its parsed tree, made at the first `scope`
/// request and kept, and the bytes of each scope asked, bounded. Parsing a config of up to 1 MiB
/// for every request was a cheap way to stall a replica; now a view is parsed once, off the event
/// loop (the fast path leaves a cut not made yet to the router), and a scope asked again is bytes.
final class ScopedCuts: Sendable {
    /// A scope's answer: the selected members, and its strong ETag.
    struct Cut: Sendable {
        let body: [UInt8]
        let etag: String
    }

    /// Why no cut was given.
    enum Refusal: Error {
        /// Not a scope by `ConfigScope`'s rules, or the config is not an object.
        case invalidScope
        /// Not cut yet, and the caller may not parse (the event loop).
        case notCutYet
    }

    /// How many distinct scopes a view keeps; the scopes are the client's to invent, so past it
    /// the one used least recently goes.
    static let capacity = 64

    private struct State {
        var tree: JSONValue?
        var cuts: [String: Cut] = [:]
        /// The scopes held, least recently used first.
        var recency: [String] = []

        mutating func used(_ scope: String) {
            if let index = recency.firstIndex(of: scope) { recency.remove(at: index) }
            recency.append(scope)
        }
    }

    private let state = Mutex(State())

    /// `scope` as it is kept: its paths trimmed, so `a, b` and `a,b` are one scope, not two
    /// entries pushing others out.
    static func normalized(_ scope: String) -> String {
        scope.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ",")
    }

    /// The cut of `scope` from `body` (the view's bytes, at `revision`); parses the view the
    /// first time when `mayParse`.
    func cut(_ asked: String, of body: [UInt8], revision: Int64, mayParse: Bool) throws(Refusal) -> Cut {
        let scope = Self.normalized(asked)
        let (held, tree) = state.withLock { state in
            let held = state.cuts[scope]
            if held != nil { state.used(scope) }
            return (held, state.tree)
        }
        if let held { return held }
        guard mayParse else { throw .notCutYet }
        guard let paths = try? ConfigScope(query: scope) else { throw .invalidScope }
        // Two first requests may both parse; either tree is the same.
        guard let parsed = tree ?? (try? JSONDecoder().decode(JSONValue.self, from: Data(body))),
            let selected = parsed.selecting(paths), let bytes = try? ServedConfig.encode(selected)
        else { throw .invalidScope }
        let cut = Cut(body: bytes, etag: ServedConfig.etag(revision: revision, bytes: bytes))
        state.withLock { state in
            state.tree = parsed
            if state.cuts[scope] == nil, state.cuts.count >= Self.capacity, let oldest = state.recency.first {
                state.cuts[oldest] = nil
                state.recency.removeFirst()
            }
            state.cuts[scope] = cut
            state.used(scope)
        }
        return cut
    }
}
