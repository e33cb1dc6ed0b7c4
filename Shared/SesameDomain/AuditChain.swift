import Crypto
import Foundation
import SesameJSON

/// The hash chain that makes an app's audit log tamper-evident. Each entry's hash covers the
/// previous entry's hash and every field of the entry, so changing or removing an entry breaks
/// every hash after it; removing the newest entries is caught against a head exported earlier.
/// Plain SHA-256, with no key: anyone holding the entries can check them.
public enum AuditChain {
    /// What the first entry of an app's chain follows.
    public static let genesis = [UInt8](repeating: 0, count: 32)

    /// How an entry's hash is made. Stored with each entry (`hash_version`) and covered by the hash
    /// itself (its label), so an entry is always checked the way it was written.
    public enum HashVersion: Int16, Sendable, CaseIterable {
        /// Details as Foundation's `JSONEncoder` writes them with sorted keys: what entries written
        /// before November 28, 2026 carry. Checked, never written.
        case v1 = 1
        /// Details as RFC 8785 canonical JSON (JCS): bytes any JCS implementation reproduces, so
        /// the chain can be checked without Sesame's code (`Tests/AdminServiceTests` checks it with
        /// Python's `rfc8785`).
        case v2 = 2

        /// What new entries are written with.
        public static let current = HashVersion.v2
    }

    /// An entry as the chain covers it.
    public struct Link: Sendable, Equatable {
        public let appID: String
        public let id: Int64
        /// Microseconds since 1970, as stored.
        public let atMicroseconds: Int64
        public let actor: String
        public let action: String
        public let pattern: String?
        public let revision: Int64?
        public let details: [String: JSONValue]
        /// How its hash is made.
        public let hashVersion: HashVersion

        public init(
            appID: String, id: Int64, atMicroseconds: Int64, actor: String, action: String, pattern: String?, revision: Int64?,
            details: [String: JSONValue], hashVersion: HashVersion = .current
        ) {
            self.hashVersion = hashVersion
            self.appID = appID
            self.id = id
            self.atMicroseconds = atMicroseconds
            self.actor = actor
            self.action = action
            self.pattern = pattern
            self.revision = revision
            self.details = details
        }
    }

    /// The hash of `link` following `previous`: SHA-256 over a version label (`sesame.audit.v2`),
    /// `previous` and each field length-prefixed with its byte count as a big-endian UInt64 (so no
    /// two different entries hash the same bytes): the app id, the id and the time in microseconds
    /// (each 8 bytes, big-endian), actor, action, the pattern and the revision (a 0 byte when
    /// absent, else 1 and the value), and the details as `link.hashVersion` writes them (v2: RFC
    /// 8785 canonical JSON, whatever format the database reads them back in).
    /// - Throws: `UnencodableDetails` when the details cannot be written canonically (a number that
    ///   is not finite, or an integer past 2^53, which JSON's numbers cannot carry exactly): such an
    ///   entry is refused, never hashed as something else.
    public static func hash(of link: Link, following previous: [UInt8]) throws(UnencodableDetails) -> [UInt8] {
        var hasher = SHA256()
        func add(_ bytes: some Collection<UInt8>) {
            withUnsafeBytes(of: UInt64(bytes.count).bigEndian) { hasher.update(bufferPointer: $0) }
            hasher.update(data: Array(bytes))
        }
        func add(_ number: Int64) { withUnsafeBytes(of: number.bigEndian) { add(Array($0)) } }
        add(Array("sesame.audit.v\(link.hashVersion.rawValue)".utf8))
        add(previous)
        add(Array(link.appID.utf8))
        add(link.id)
        add(link.atMicroseconds)
        add(Array(link.actor.utf8))
        add(Array(link.action.utf8))
        add(link.pattern.map { [1] + Array($0.utf8) } ?? [0])
        add(link.revision.map { number in [1] + withUnsafeBytes(of: number.bigEndian) { Array($0) } } ?? [0])
        switch link.hashVersion {
        case .v1: add(try canonicalDetails(link.details))
        case .v2: add(try jcsDetails(link.details))
        }
        return Array(hasher.finalize())
    }

    /// The details as RFC 8785 canonical JSON (version 2).
    /// - Throws: `UnencodableDetails` for a number JCS cannot write exactly: not finite, or an
    ///   integer past 2^53.
    public static func jcsDetails(_ details: [String: JSONValue]) throws(UnencodableDetails) -> [UInt8] {
        do {
            return try JSONValue.object(details).canonicalBytes()
        } catch {
            throw UnencodableDetails(reason: error.description)
        }
    }

    /// The details as version 1 hashed them: JSON with sorted keys and unescaped slashes.
    /// - Throws: `UnencodableDetails` when they cannot be written as JSON.
    public static func canonicalDetails(_ details: [String: JSONValue]) throws(UnencodableDetails) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return Array(try encoder.encode(details))
        } catch {
            throw UnencodableDetails(reason: String(describing: error))
        }
    }

    /// An entry's details that JSON cannot carry (a number that is not finite).
    public struct UnencodableDetails: Error, Sendable, CustomStringConvertible {
        public let reason: String
        public var description: String { "the audit entry's details cannot be written as JSON: \(reason)" }
    }

    /// Where an app's chain began, as the log records it (`audit_chain_starts`).
    public enum ChainStart: Sendable, Equatable {
        /// Not looked up: only the links are checked (entries without hashes before the first
        /// hashed one are taken as written before the chain).
        case notChecked
        /// The log has no record: every entry must predate the chain.
        case notRecorded
        /// The id of the app's first hashed entry: every entry from it on must be hashed.
        case entry(Int64)
    }

    /// Walks an app's entries in id order and finds the first that breaks the chain.
    public struct Verifier: Sendable {
        /// Entries read so far.
        public private(set) var entries = 0
        /// Entries written before the chain began (no hash), all before the first chained one.
        public private(set) var predating = 0
        /// The newest chained entry: its id and hash.
        public private(set) var head: (id: Int64, hash: [UInt8])?
        /// The first entry that breaks the chain, and why; nothing after it is checked.
        public private(set) var broken: (id: Int64, reason: String)?
        /// A head exported earlier, which the chain must still reach.
        public let expectedHead: [UInt8]?
        /// What the log records of where the chain began.
        public let chainStart: ChainStart
        /// Whether an intact entry carried `expectedHead`.
        public private(set) var reachedExpectedHead = false
        /// Entries whose seal (`AuditSeal`) was checked: once one is sealed, every later one must be.
        public private(set) var sealed = 0

        public init(expectedHead: [UInt8]? = nil, chainStart: ChainStart = .notChecked) {
            self.expectedHead = expectedHead
            self.chainStart = chainStart
        }

        /// Checks the next entry, stored with `previousHash` and `entryHash` (nil before the chain).
        public mutating func check(_ link: Link, previousHash: [UInt8]?, entryHash: [UInt8]?) {
            guard broken == nil else { return }
            entries += 1
            guard let entryHash, let previousHash else {
                if case .entry(let first) = chainStart, link.id >= first {
                    broken = (link.id, "the entry has lost its hash: the app's chain began at entry \(first)")
                } else if head == nil && entryHash == nil && previousHash == nil {
                    predating += 1
                } else {
                    broken = (link.id, "the entry has lost its hash, after the chain began")
                }
                return
            }
            if head == nil {
                switch chainStart {
                case .notChecked: break
                case .notRecorded:
                    broken = (link.id, "there is no record of where the app's chain began: it was removed")
                    return
                case .entry(let first) where first != link.id:
                    broken = (link.id, "the app's chain began at entry \(first), but its first hashed entry is \(link.id): entries were removed, or stripped of their hashes")
                    return
                case .entry: break
                }
            }
            guard previousHash == head?.hash ?? AuditChain.genesis else {
                broken = (link.id, head.map { "the entry does not follow entry \($0.id): an entry between them was removed, or its hash rewritten" }
                    ?? "the first chained entry does not start the chain: entries before it were removed or stripped of their hashes")
                return
            }
            guard let hash = try? AuditChain.hash(of: link, following: previousHash) else {
                broken = (link.id, "the entry's details cannot be written as JSON, so its hash cannot be checked")
                return
            }
            guard hash == entryHash else {
                broken = (link.id, "the entry was changed after it was written: its hash does not cover what it says")
                return
            }
            head = (link.id, entryHash)
            if entryHash == expectedHead { reachedExpectedHead = true }
        }

        /// Checks the seal of the entry just checked (`sealed`: it has one; `valid`: made by
        /// Sesame's master key). Entries written before seals existed come first, unsealed.
        public mutating func checkSeal(id: Int64, sealed isSealed: Bool, valid: Bool) {
            guard broken == nil else { return }
            if isSealed && !valid {
                broken = (id, "the entry's seal was not made by this deployment's master key: it was written by someone else")
            } else if !isSealed && sealed > 0 {
                broken = (id, "the entry has no seal, after entries began to carry one: it was written outside Sesame")
            } else if isSealed {
                sealed += 1
            }
        }
    }
}
