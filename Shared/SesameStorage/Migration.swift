import Crypto
import SesameDomain

/// One versioned schema change. Released migrations are never edited: a later change is a new migration.
public struct Migration: Sendable {
    /// Position in the sequence, starting at 1, without gaps.
    public let version: Int
    /// A short description, stored with the version.
    public let name: String
    /// The statements, run in order inside the migration transaction (one statement per string).
    public let statements: [String]

    /// Creates a migration.
    public init(version: Int, name: String, statements: [String]) {
        self.version = version
        self.name = name
        self.statements = statements
    }

    /// SHA-256 of the statements, hex: detects a released migration that was edited afterwards.
    public var checksum: String {
        var hasher = SHA256()
        for statement in statements {
            hasher.update(data: Array(statement.utf8))
            hasher.update(data: [0])
        }
        return Hex.encode(hasher.finalize())
    }
}
