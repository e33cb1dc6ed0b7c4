/// A configuration problem found at start-up: names the variable and says what it expects.
public struct ConfigurationError: Error, CustomStringConvertible, Equatable, Sendable {
    /// The environment variable at fault, e.g. `SESAME_MASTER_KEY`.
    public let variable: String
    /// What the variable must hold, phrased so an operator knows what to set.
    public let expectation: String

    /// Creates an error for `variable`, which should hold `expectation`.
    public init(variable: String, expectation: String) {
        self.variable = variable
        self.expectation = expectation
    }

    public var description: String { "\(variable): \(expectation)" }
}
