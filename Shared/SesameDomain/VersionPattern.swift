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
        let rule = "a version pattern is *, N.*, N.N.* or N.N.N with non-negative whole numbers"
        guard !text.isEmpty, text.utf8.count <= 32 else { throw InvalidPattern(description: "'\(text.prefix(32))' is not \(rule)") }
        var parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        isWildcard = parts.last == "*"
        if isWildcard { parts.removeLast() }
        guard parts.count <= (isWildcard ? 2 : 3), isWildcard || parts.count == 3 else {
            throw InvalidPattern(description: "'\(text)' is not \(rule)")
        }
        var numbers: [Int] = []
        for part in parts {
            guard let number = Int(part), number >= 0, part.allSatisfy(\.isASCII), part.allSatisfy(\.isNumber), part.count <= 9 else {
                throw InvalidPattern(description: "'\(text)' is not \(rule)")
            }
            numbers.append(number)
        }
        components = numbers
    }

    /// Whether an app at `version` (`N.N.N`, or `N` / `N.N`, read with zeros) falls under the pattern.
    public func matches(_ version: String) -> Bool {
        let parts = version.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return false }
        var numbers = parts.compactMap { Int($0) }
        guard numbers.count == parts.count else { return false }
        while numbers.count < 3 { numbers.append(0) }
        return isWildcard ? Array(numbers.prefix(components.count)) == components : numbers == components
    }

    /// The patterns that could serve an app at `version`, most specific first: `2.1.3`, `2.1.*`,
    /// `2.*`, `*` (the first one that exists wins); nil when `version` is not `N`, `N.N` or `N.N.N`.
    public static func lookupOrder(for version: String) -> [String]? {
        let parts = version.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count), version.utf8.count <= 32,
            parts.allSatisfy({ !$0.isEmpty && $0.count <= 9 && $0.allSatisfy { $0.isASCII && $0.isNumber } })
        else { return nil }
        var numbers = parts.compactMap { Int($0) }.map(String.init)
        while numbers.count < 3 { numbers.append("0") }
        return [numbers.joined(separator: "."), "\(numbers[0]).\(numbers[1]).*", "\(numbers[0]).*", "*"]
    }

    public var description: String {
        (components.map(String.init) + (isWildcard ? ["*"] : [])).joined(separator: ".")
    }
}
