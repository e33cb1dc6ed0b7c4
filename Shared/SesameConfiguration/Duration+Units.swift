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
