/// Reads typed values from a snapshot of the process environment, with errors that name the variable.
///
/// Takes the environment as a dictionary so that tests can pass their own instead of mutating the process.
public struct EnvironmentReader: Sendable {
    /// The variables this reader sees.
    public let variables: [String: String]

    /// Creates a reader over `variables` (empty strings count as unset).
    public init(_ variables: [String: String]) {
        self.variables = variables.filter { !$0.value.isEmpty }
    }

    /// The raw value of `name`, or nil when it is unset or empty.
    public func string(_ name: String) -> String? {
        variables[name]
    }

    /// `name` parsed as a value of `T`, `defaultValue` when unset.
    public func value<T: RawRepresentable>(_ name: String, default defaultValue: T) throws(ConfigurationError) -> T
    where T.RawValue == String, T: CaseIterable {
        guard let raw = string(name) else { return defaultValue }
        guard let value = T(rawValue: raw.lowercased()) else {
            let allowed = T.allCases.map(\.rawValue).joined(separator: " | ")
            throw ConfigurationError(variable: name, expectation: "one of \(allowed), got \"\(raw)\"")
        }
        return value
    }

    /// `name` as a TCP port, `defaultValue` when unset.
    public func port(_ name: String, default defaultValue: Int) throws(ConfigurationError) -> Int {
        try port(name) ?? defaultValue
    }

    /// `name` as a TCP port, nil when unset.
    public func port(_ name: String) throws(ConfigurationError) -> Int? {
        guard let raw = string(name) else { return nil }
        guard let port = Int(raw), (1...65535).contains(port) else {
            throw ConfigurationError(variable: name, expectation: "a port number from 1 to 65535, got \"\(raw)\"")
        }
        return port
    }

    /// `name` as a positive integer, `defaultValue` when unset.
    public func positiveInteger(_ name: String, default defaultValue: Int) throws(ConfigurationError) -> Int {
        guard let raw = string(name) else { return defaultValue }
        guard let value = Int(raw), value > 0 else {
            throw ConfigurationError(variable: name, expectation: "a positive whole number, got \"\(raw)\"")
        }
        return value
    }

    /// `name` as a duration: whole seconds, or a number with `s`, `m`, `h` or `d` (`900`, `15m`, `30d`),
    /// within `range`; `defaultValue` when unset.
    public func duration(_ name: String, default defaultValue: Duration, within range: ClosedRange<Duration>)
        throws(ConfigurationError) -> Duration
    {
        guard let raw = string(name) else { return defaultValue }
        guard let duration = Duration(written: raw), range.contains(duration) else {
            throw ConfigurationError(
                variable: name,
                expectation: "a duration from \(range.lowerBound.written) to \(range.upperBound.written) such as 900, 15m, 12h or 30d, got \"\(raw)\"")
        }
        return duration
    }

    /// `name` as on/off (`on`, `off`, `true`, `false`, `1`, `0`), `defaultValue` when unset.
    public func flag(_ name: String, default defaultValue: Bool) throws(ConfigurationError) -> Bool {
        guard let raw = string(name) else { return defaultValue }
        switch raw.lowercased() {
        case "on", "true", "1", "yes": return true
        case "off", "false", "0", "no": return false
        default: throw ConfigurationError(variable: name, expectation: "on or off, got \"\(raw)\"")
        }
    }
}
