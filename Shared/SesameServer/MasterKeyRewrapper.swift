import Logging
import NIOCore
import PostgresNIO
import SesameEncryption
import SesameStorage

/// Re-wraps every stored ciphertext under the current master key after a rotation, so the previous
/// key can then be removed from `SESAME_MASTER_KEY_PREVIOUS`.
///
/// Only the wrapped data key changes; each row is updated only if it still holds the value read, so
/// running it beside live services (or twice at once) is safe.
public struct MasterKeyRewrapper: Sendable {
    /// What a run did.
    public struct Report: Sendable, Equatable {
        /// Ciphertexts now wrapped under the current key.
        public var rewrapped = 0
        /// Ciphertexts that could not be opened (wrapped under a key not configured, or corrupt).
        public var failed = 0

        /// Creates a report.
        public init(rewrapped: Int = 0, failed: Int = 0) {
            self.rewrapped = rewrapped
            self.failed = failed
        }
    }

    let encryption: EnvelopeEncryption
    let columns: [EncryptedColumns.Column]
    let batchSize = 500

    /// Creates a rewrapper over `columns` (every encrypted column by default).
    public init(encryption: EnvelopeEncryption, columns: [EncryptedColumns.Column] = EncryptedColumns.all) {
        self.encryption = encryption
        self.columns = columns
    }

    /// Walks every encrypted column once.
    public func run(on client: some PostgresConnectionSource, logger: Logger) async throws -> Report {
        var report = Report()
        let currentID = ByteBuffer(bytes: encryption.keyring.currentID.bytes)
        for target in columns {
            // Table and column names come from the constant list above, never from input.
            let select = """
                SELECT ctid::text, \(target.column) FROM \(target.table)
                WHERE \(target.column) IS NOT NULL AND substring(\(target.column) FROM 2 FOR 8) <> $1 AND ctid > $2::tid
                ORDER BY ctid LIMIT \(batchSize)
                """
            let update = "UPDATE \(target.table) SET \(target.column) = $1 WHERE ctid = $2::tid AND \(target.column) = $3"
            var lastLocation = "(0,0)"
            while true {
                var selectBinds = PostgresBindings()
                selectBinds.append(currentID)
                selectBinds.append(lastLocation)
                var batch: [(String, ByteBuffer)] = []
                for try await row in try await client.query(PostgresQuery(unsafeSQL: select, binds: selectBinds), logger: logger, file: #fileID, line: #line)
                    .decode((String, ByteBuffer).self)
                {
                    batch.append(row)
                }
                guard let last = batch.last else { break }
                lastLocation = last.0
                for (location, stored) in batch {
                    let bytes = Array(buffer: stored)
                    do {
                        guard let rewrapped = try encryption.rewrap(bytes) else { continue }
                        var updateBinds = PostgresBindings()
                        updateBinds.append(ByteBuffer(bytes: rewrapped))
                        updateBinds.append(location)
                        updateBinds.append(stored)
                        try await client.query(PostgresQuery(unsafeSQL: update, binds: updateBinds), logger: logger, file: #fileID, line: #line)
                        report.rewrapped += 1
                    } catch let error as EnvelopeError {
                        report.failed += 1
                        logger.error("cannot re-wrap a ciphertext", metadata: ["table": "\(target.table)", "error": "\(String(reflecting: error))"])
                    }
                }
            }
        }
        return report
    }
}
