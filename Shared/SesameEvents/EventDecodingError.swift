/// Why bytes read from a topic are not an event this build can use.
public enum EventDecodingError: Error, Sendable, Equatable {
    /// Not JSON, or missing or mistyped fields.
    case malformed(String)
    /// Written by a newer major version of Sesame.
    case unsupportedVersion(Int)
    /// A type this build does not know (a newer minor version may add types).
    case unknownType(String)

    /// A short label for metrics and logs.
    public var reason: String {
        switch self {
        case .malformed: "malformed"
        case .unsupportedVersion: "unsupported_version"
        case .unknownType: "unknown_type"
        }
    }
}
