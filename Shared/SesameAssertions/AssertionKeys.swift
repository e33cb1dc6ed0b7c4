import Foundation
import Logging
import PostgresNIO
import SesameStorage

/// What an assertion check reads and writes of a stored key: the key, and its counter moved on.
public struct AssertionKeys: Sendable {
    let database: Database
    let logger: Logger

    public init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    public func key(_ keyID: [UInt8]) async throws -> AttestedKey? {
        for try await stored in try await database.client.execute(KeyStatement(keyID: Data(keyID)), logger: logger) {
            return AttestedKey(keyID: keyID, stored: stored)
        }
        return nil
    }

    /// Moves the key's counter to `counter` if that is still an increase: two requests racing with
    /// the same assertion cannot both pass.
    public func advanceCounter(of keyID: [UInt8], to counter: UInt32) async throws -> Bool {
        for try await _ in try await database.client.execute(AdvanceCounterStatement(keyID: Data(keyID), counter: Int64(counter)), logger: logger) {
            return true
        }
        return false
    }
}

// An assertion's two statements, prepared once per connection (auth's refresh with an assertion
// and the backend's assertion check, delivery's relay calls that ask for one, run both).

private struct KeyStatement: PostgresPreparedStatement {
    static let sql = "SELECT app_id, public_key, counter, environment, revoked_at IS NOT NULL FROM attested_keys WHERE key_id = $1"
    typealias Row = AttestedKey.StoredColumns
    let keyID: Data

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        try bindings.append(keyID)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

private struct AdvanceCounterStatement: PostgresPreparedStatement {
    static let sql = "UPDATE attested_keys SET counter = $2, last_used_at = now() WHERE key_id = $1 AND counter < $2 RETURNING 1"
    typealias Row = Int32
    let keyID: Data
    let counter: Int64

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        try bindings.append(keyID)
        bindings.append(counter)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int32.self) }
}
