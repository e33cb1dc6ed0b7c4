import SesameJSON
/// One difference between two JSON documents.
public struct JSONChange: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        case added, removed, changed
    }

    /// The keys (or array indices, as decimal text) from the root to the value.
    public let path: [String]
    public let kind: Kind
    /// The value before; absent when added.
    public let from: JSONValue?
    /// The value after; absent when removed.
    public let to: JSONValue?

    public init(path: [String], kind: Kind, from: JSONValue?, to: JSONValue?) {
        self.path = path
        self.kind = kind
        self.from = from
        self.to = to
    }
}

extension JSONValue {
    /// What changed from `self` to `other`, deepest first where objects meet objects, in key order:
    /// objects are compared key by key, arrays element by element (a changed length shows as
    /// elements added or removed at the end), anything else as a whole.
    public func changes(to other: JSONValue, at path: [String] = []) -> [JSONChange] {
        switch (self, other) {
        case (.object(let before), .object(let after)):
            return Set(before.keys).union(after.keys).sorted().flatMap { key -> [JSONChange] in
                switch (before[key], after[key]) {
                case (let old?, let new?): old.changes(to: new, at: path + [key])
                case (let old?, nil): [JSONChange(path: path + [key], kind: .removed, from: old, to: nil)]
                case (nil, let new?): [JSONChange(path: path + [key], kind: .added, from: nil, to: new)]
                case (nil, nil): []
                }
            }
        case (.array(let before), .array(let after)):
            return (0..<max(before.count, after.count)).flatMap { index -> [JSONChange] in
                let key = String(index)
                switch (index < before.count ? before[index] : nil, index < after.count ? after[index] : nil) {
                case (let old?, let new?): return old.changes(to: new, at: path + [key])
                case (let old?, nil): return [JSONChange(path: path + [key], kind: .removed, from: old, to: nil)]
                case (nil, let new?): return [JSONChange(path: path + [key], kind: .added, from: nil, to: new)]
                case (nil, nil): return []
                }
            }
        default:
            return self == other ? [] : [JSONChange(path: path, kind: .changed, from: self, to: other)]
        }
    }
}
