/// Storage failures with messages safe to log: never a password, a query's data or a server message.
public enum StorageError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `SESAME_DATABASE_URL` could not be understood.
    case invalidDatabaseURL(String)
    /// PostgreSQL did not answer in time or refused the connection.
    case unavailable
    /// A migration already applied differs from the one in this build: released migrations must never be edited.
    case migrationChanged(version: Int, name: String)
    /// The database was migrated by a newer build than this one.
    case databaseNewerThanBuild(appliedVersion: Int, knownVersion: Int)
    /// A statement that always returns a row returned none.
    case missingRow(String)
    /// Every connection of the pool is busy and the most queries that may wait for one are waiting.
    case busy

    public var description: String {
        switch self {
        case .invalidDatabaseURL(let reason): "SESAME_DATABASE_URL is invalid: \(reason)"
        case .unavailable: "PostgreSQL is unavailable"
        case .migrationChanged(let version, let name):
            "migration \(version) (\(name)) differs from the one already applied; add a new migration instead of editing a released one"
        case .databaseNewerThanBuild(let applied, let known):
            "the database is at migration \(applied) but this build knows only up to \(known); upgrade this service"
        case .missingRow(let what): "PostgreSQL returned no row for \(what)"
        case .busy: "every database connection is busy and the wait for one is full"
        }
    }
}
