import Foundation
import SesameDomain
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
        /// Not a list of 1 to 100 dot-separated paths of at most 200 characters, or not an object.
        case invalidScope
        /// Not cut yet, and the caller may not parse (the event loop).
        case notCutYet
    }

    /// How many distinct scopes a view keeps; the scopes are the client's to invent, so the
    /// store starts again when full.
    static let capacity = 64

    private let state = Mutex<(tree: JSONValue?, cuts: [String: Cut])>((nil, [:]))

    /// The cut of `scope` from `body` (the view's bytes, at `revision`); parses the view the
    /// first time when `mayParse`.
    func cut(_ scope: String, of body: [UInt8], revision: Int64, mayParse: Bool) throws(Refusal) -> Cut {
        let (held, tree) = state.withLock { ($0.cuts[scope], $0.tree) }
        if let held { return held }
        guard mayParse else { throw .notCutYet }
        let paths = scope.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !paths.isEmpty, paths.count <= 100, paths.allSatisfy({ !$0.isEmpty && $0.count <= 200 }) else { throw .invalidScope }
        // Two first requests may both parse; either tree is the same.
        guard let parsed = tree ?? (try? JSONDecoder().decode(JSONValue.self, from: Data(body))),
            let selected = parsed.selecting(paths: paths), let bytes = try? ServedConfig.encode(selected)
        else { throw .invalidScope }
        let cut = Cut(body: bytes, etag: ServedConfig.etag(revision: revision, bytes: bytes))
        state.withLock { state in
            state.tree = parsed
            if state.cuts.count >= Self.capacity { state.cuts.removeAll(keepingCapacity: true) }
            state.cuts[scope] = cut
        }
        return cut
    }
}
