/// A version pattern configs and revocations are addressed by: `*`, `N.*`, `N.N.*` or `N.N.N`.
public struct VersionPattern: Sendable, Hashable, CustomStringConvertible {
    /// The numeric components before the wildcard, or all three for an exact version.
    public let components: [Int]
    /// Whether the pattern ends in `*`.
    public let isWildcard: Bool

    /// Why a pattern was refused, in words a developer can act on.
    public struct InvalidPattern: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Parses `text`, or says which rule it breaks.
    public init(_ text: String) throws(InvalidPattern) {
        let rule = "a version pattern is *, N.*, N.N.* or N.N.N with whole numbers of at most \(AppVersion.maximumPartDigits) digits"
        guard !text.isEmpty, text.utf8.count <= 32 else { throw InvalidPattern(description: "'\(text.prefix(32))' is not \(rule)") }
        var parts = text.split(separator: ".", omittingEmptySubsequences: false)
        isWildcard = parts.last == "*"
        if isWildcard { parts.removeLast() }
        guard parts.count <= (isWildcard ? 2 : 3), isWildcard || parts.count == 3 else {
            throw InvalidPattern(description: "'\(text)' is not \(rule)")
        }
        var numbers: [Int] = []
        for part in parts {
            guard let number = AppVersion.part(part) else { throw InvalidPattern(description: "'\(text)' is not \(rule)") }
            numbers.append(number)
        }
        components = numbers
    }

    /// Whether an app at `version` falls under the pattern.
    public func matches(_ version: AppVersion) -> Bool {
        isWildcard ? Array(version.components.prefix(components.count)) == components : version.components == components
    }

    public var description: String {
        (components.map(String.init) + (isWildcard ? ["*"] : [])).joined(separator: ".")
    }
}
