/// A `Duration` in the units the systems Sesame talks to take: PostgreSQL intervals and JWT claims
/// (whole seconds), librdkafka (milliseconds), swift-metrics (nanoseconds), `Retry-After`.
extension Duration {
    /// Seconds, fraction included.
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// Whole seconds, the fraction dropped.
    public var wholeSeconds: Int64 { components.seconds }

    /// Whole seconds, any fraction counted as a second (a wait a client is told to respect).
    public var secondsRoundedUp: Int { Int(inSeconds.rounded(.up)) }

    /// Whole milliseconds, the fraction dropped.
    public var inMilliseconds: Int {
        Int(components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000)
    }

    /// Whole nanoseconds, the fraction dropped.
    public var inNanoseconds: Int64 {
        components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
    }
}

extension Duration {
    private static let writtenUnits: [(suffix: Character, seconds: Int64)] = [("d", 86400), ("h", 3600), ("m", 60), ("s", 1)]

    /// A duration as people write one: whole seconds, or a number with `s`, `m`, `h` or `d`
    /// (`900`, `15m`, `12h`, `30d`); nil for anything else.
    public init?(written text: String) {
        var digits = Substring(text.lowercased())
        var unit: Int64 = 1
        if let last = digits.last, let match = Self.writtenUnits.first(where: { $0.suffix == last }) {
            unit = match.seconds
            digits = digits.dropLast()
        }
        guard let count = Int64(digits), count >= 0, count <= Int64.max / 86400 else { return nil }
        self = .seconds(count * unit)
    }

    /// This duration in the largest unit that writes it whole (`30d`, `15m`, `90s`).
    public var written: String {
        let seconds = wholeSeconds
        for (suffix, size) in Self.writtenUnits where seconds % size == 0 && seconds >= size {
            return "\(seconds / size)\(suffix)"
        }
        return "\(seconds)s"
    }
}
