import Foundation
// Apps read `SesameConfig.Value` without importing a second module.
@_exported import SesameJSON

/// A config as the app reads it: a JSON object, read by dot paths (`api_keys.stripe`).
public struct SesameConfig: Sendable, Equatable {
    /// A JSON value: Sesame's one JSON value type, so a whole number stays an integer (`.integer`)
    /// and a fraction is a `.number`.
    public typealias Value = JSONValue

    /// Where a config came from.
    public enum Source: Sendable, Equatable {
        /// Sesame answered now (a 304 confirming the saved copy counts).
        case network
        /// The saved copy, because Sesame could not be reached or it was still fresh.
        case cache
        /// `SesameClient.Configuration.fallbackConfig`.
        case fallback
    }

    /// How much Sesame trusted this install when it sent the config: what decides which keys it got.
    public enum Tier: String, Sendable, Equatable, Codable {
        /// App Attest proved the app genuine: nothing withheld.
        case attested
        /// A debug token (`DebugTokenAttest`).
        case debug
        /// A device without App Attest, admitted by the app's policy.
        case unattested
    }

    /// The whole config (as far as `tier` may see it).
    public let values: [String: Value]
    /// The tier it was served at; nil for the fallback config.
    public let tier: Tier?
    /// The top-level keys Sesame left out because `tier` may not see them.
    public let withheld: [String]
    /// Whether it is older than Sesame said it may be used for (served offline).
    public let isStale: Bool
    /// Where it came from.
    public let source: Source
    /// The revision of the matched pattern; 0 for the fallback.
    public let revision: Int64
    /// The version pattern that served it (`2.1.*`); empty for the fallback.
    public let matchedPattern: String
    /// The staged rollout of `matchedPattern` in flight when it was served, and whether this
    /// install is in it; nil when none was.
    public let rollout: Rollout?

    /// Where a staged rollout placed this install.
    public struct Rollout: Codable, Sendable, Equatable {
        /// The rollout's id, as `sesame config rollouts` lists it.
        public let id: String
        /// Whether this install got the rollout's revision (true) or the pattern's previous one.
        public let included: Bool

        public init(id: String, included: Bool) {
            self.id = id
            self.included = included
        }
    }

    /// A config (SesameKit makes these; tests may too).
    public init(
        values: [String: Value], isStale: Bool, source: Source, revision: Int64, matchedPattern: String, tier: Tier? = nil,
        withheld: [String] = [], rollout: Rollout? = nil
    ) {
        self.rollout = rollout
        self.values = values
        self.tier = tier
        self.withheld = withheld
        self.isStale = isStale
        self.source = source
        self.revision = revision
        self.matchedPattern = matchedPattern
    }

    /// The value at a dot path (`features.checkout.enabled`), or nil.
    public func value(_ path: String) -> Value? {
        var current: Value = .object(values)
        for key in path.split(separator: ".", omittingEmptySubsequences: false) {
            guard case .object(let object) = current, let next = object[String(key)] else { return nil }
            current = next
        }
        return current
    }

    /// The string at `path`, or nil when absent or not a string.
    public func string(_ path: String) -> String? {
        if case .string(let value) = value(path) { return value }
        return nil
    }

    /// The boolean at `path`, or nil when absent or not a boolean.
    public func bool(_ path: String) -> Bool? {
        if case .bool(let value) = value(path) { return value }
        return nil
    }

    /// The whole number at `path`, or nil when absent, not a number, not whole or past `Int`.
    public func int(_ path: String) -> Int? { value(path)?.intValue }

    /// The number at `path` (an integer too), or nil when absent or not a number.
    public func double(_ path: String) -> Double? { value(path)?.doubleValue }

    // MARK: With defaults

    /// The string at `path`, or `defaultValue` when absent or not a string.
    public func string(_ path: String, default defaultValue: String) -> String { string(path) ?? defaultValue }

    /// The boolean at `path`, or `defaultValue` when absent or not a boolean.
    public func bool(_ path: String, default defaultValue: Bool) -> Bool { bool(path) ?? defaultValue }

    /// The whole number at `path`, or `defaultValue` when absent, not a number or not whole.
    public func int(_ path: String, default defaultValue: Int) -> Int { int(path) ?? defaultValue }

    /// The number at `path`, or `defaultValue` when absent or not a number.
    public func double(_ path: String, default defaultValue: Double) -> Double { double(path) ?? defaultValue }

    // MARK: Codable

    /// The config (or the part of it at the dot path `path`) decoded as `type`:
    ///
    /// ```swift
    /// struct Payments: Decodable { let stripeKey: String; let retries: Int }
    /// let payments = try config.decode(Payments.self, at: "payments")
    /// ```
    /// - Throws: `DecodingError` when the value does not fit `type`; `SesameConfigError.missing`
    ///   when nothing is at `path`.
    public func decode<T: Decodable>(_ type: T.Type, at path: String? = nil, using decoder: JSONDecoder = JSONDecoder()) throws -> T {
        let root: Value
        if let path {
            guard let found = value(path) else { throw SesameConfigError.missing(path: path) }
            root = found
        } else {
            root = .object(values)
        }
        return try decoder.decode(T.self, from: JSONEncoder().encode(root))
    }
}

/// Why `SesameConfig.decode` found nothing to decode.
public enum SesameConfigError: Error, Sendable, Equatable {
    /// The config has no value at `path`.
    case missing(path: String)
}
