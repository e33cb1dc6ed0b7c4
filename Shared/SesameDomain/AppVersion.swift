/// An app's version as the app reports it: `N`, `N.N` or `N.N.N`, each part a whole number of at
/// most 9 ASCII digits (so it always fits, and never overflows into matching nothing). Missing
/// parts read as 0. Parsed once at the edge; every comparison uses the parsed value.
public struct AppVersion: Sendable, Hashable, CustomStringConvertible {
    /// Major, minor and patch.
    public let components: [Int]
    /// The text as the app sent it (echoed back as `requestedVersion`).
    public let text: String
    /// The patterns that could serve this version, most specific first: `2.1.3`, `2.1.*`, `2.*`,
    /// `*` (the first one that is published wins). Made once here: delivery resolves a version
    /// from its parsed query, remembered by target, on every request.
    public let lookupOrder: [String]

    /// The most digits one part may have.
    public static let maximumPartDigits = 9

    /// Parses `text`; nil when it is not `N`, `N.N` or `N.N.N`.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var numbers: [Int] = []
        for part in parts {
            guard let number = Self.part(part) else { return nil }
            numbers.append(number)
        }
        while numbers.count < 3 { numbers.append(0) }
        components = numbers
        self.text = String(text)
        let (major, minor, patch) = (numbers[0], numbers[1], numbers[2])
        lookupOrder = ["\(major).\(minor).\(patch)", "\(major).\(minor).*", "\(major).*", "*"]
    }

    /// One part: 1 to 9 ASCII digits.
    static func part(_ text: some StringProtocol) -> Int? {
        guard (1...maximumPartDigits).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int(text)
    }

    /// `2.1.3` for `2.1.3`, `2.1.0` for `2.1`: the most specific pattern of `lookupOrder`.
    public var description: String { lookupOrder[0] }
}
