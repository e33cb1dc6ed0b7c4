import Crypto
import Foundation

/// The suite's development master key, and the check that the database was sealed under it.
struct MasterKey: Sendable {
    let layout: SuiteLayout
    let warn: @Sendable (String) -> Void

    private var file: String { layout.state + "/master.key" }
    private var marker: String { layout.postgresRoot + "/master-key.sha256" }

    /// The key in the state folder, made (readable by this user only) when there is none.
    func value() throws -> String {
        if let key = try? String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines), !key.isEmpty {
            return key
        }
        let key = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0).base64EncodedString() }
        try FileManager.default.createDirectory(atPath: layout.state, withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: file, contents: Data((key + "\n").utf8), attributes: [.posixPermissions: 0o600]) else {
            throw SuiteError("could not write \(file)")
        }
        warn("generated a development master key for this local suite in \(file) (never use it in production)")
        return key
    }

    /// Whether a cluster already recorded which key sealed its data.
    var isRecorded: Bool { FileManager.default.fileExists(atPath: marker) }

    /// The database's values are sealed under the master key that was current when they were
    /// written. A cluster that outlived its state folder (as root it lives under /tmp) would hold
    /// data no key here opens: say so before starting services that cannot serve it. The first
    /// check records the key's fingerprint.
    func check(_ key: String) throws {
        let fingerprint = sha256Hex(key).prefix(16)
        if let recorded = try? String(contentsOfFile: marker, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines), !recorded.isEmpty {
            guard recorded == fingerprint else {
                throw SuiteError(
                    "the database in \(layout.postgresData) holds data sealed under another master key than \(file) (was the state folder deleted?). "
                        + "Restore that key, or start afresh with: ./sesame-dev down --purge")
            }
            return
        }
        try (fingerprint + "\n").write(toFile: marker, atomically: true, encoding: .utf8)
    }
}
