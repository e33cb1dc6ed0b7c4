import Crypto
import Foundation

/// A staged rollout of one pattern's newest revision: a share of the pattern's installs gets it,
/// the rest keep what the pattern served before. Which installs is decided by a bucket, a stable
/// hash of the app, the rollout's salt and the install's token subject: sticky for an install
/// (widening only adds installs), independent between rollouts (each has its own salt), uniform.
public struct Rollout<Config: Sendable>: Sendable {
    /// The rollout's id.
    public let id: UUID
    /// `id` as the API and the answer write it (lowercase), made once rather than per answer.
    public let idText: String
    /// The share of installs that get the new revision, in basis points (0...10,000: 500 is 5 %).
    public let basisPoints: Int
    /// While paused, every install gets `previous`; resuming gives the same installs the new revision again.
    public let paused: Bool
    /// What the installs outside the rollout get; nil when the pattern served nothing before, and
    /// they are resolved as if it published nothing (a less specific pattern, or no config).
    public let previous: Config?

    /// The hash of what every install's bucket of this rollout starts with (the app whose installs
    /// are bucketed, and the salt that makes two rollouts pick independent shares), made once.
    private let seed: RolloutBucket.Seed

    public init(id: UUID, appID: String, basisPoints: Int, salt: String, paused: Bool, previous: Config?) {
        self.id = id
        idText = id.uuidString.lowercased()
        self.basisPoints = basisPoints
        self.paused = paused
        self.previous = previous
        seed = RolloutBucket.Seed(appID: appID, salt: salt)
    }

    /// Whether the install whose token subject is `install` gets the new revision now.
    public func includes(install: String) -> Bool {
        place(install: install).included
    }

    /// Whether the install gets the new revision now, and its mark: a hash of it in this rollout,
    /// independent of its bucket, by which the installs on each side are counted (`DistinctCount`).
    public func place(install: String) -> (included: Bool, mark: UInt64) {
        let (bucket, mark) = seed.place(install)
        return (!paused && bucket < basisPoints, mark)
    }
}

/// The buckets rollouts share out: an install's bucket, and percentages as the bucket counts they cover.
public enum RolloutBucket {
    /// How many buckets there are: one per basis point of installs.
    public static let count = 10_000

    /// The install's bucket, 0..<10,000: SHA-256 over the app, the salt and the install's token
    /// subject (each length-prefixed, so no two inputs share a hash input; the first two hashed
    /// once per rollout, `Seed`), its first 8 bytes read as a number.
    public static func of(appID: String, salt: String, install: String) -> Int {
        Seed(appID: appID, salt: salt).place(install).bucket
    }

    /// What every bucket of one rollout starts with: SHA-256 over the domain, the app and the salt.
    struct Seed: Sendable {
        private let digest: [UInt8]

        init(appID: String, salt: String) {
            var hasher = SHA256()
            for part in ["sesame.rollout.v1", appID, salt] { Self.update(&hasher, with: part) }
            digest = Array(hasher.finalize())
        }

        /// The install's bucket (from the hash's first 8 bytes) and its mark (the next 8).
        func place(_ install: String) -> (bucket: Int, mark: UInt64) {
            var hasher = SHA256()
            digest.withUnsafeBytes { hasher.update(bufferPointer: $0) }
            Self.update(&hasher, with: install)
            return hasher.finalize().withUnsafeBytes { bytes in
                let value = bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                let mark = bytes.dropFirst(8).prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                return (Int(value % UInt64(RolloutBucket.count)), mark)
            }
        }

        private static func update(_ hasher: inout SHA256, with part: String) {
            var part = part
            part.withUTF8 { bytes in
                withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { hasher.update(bufferPointer: $0) }
                hasher.update(bufferPointer: UnsafeRawBufferPointer(bytes))
            }
        }
    }

    /// Basis points from a percentage (`5`, `0.5`, `100`): nil outside 0...100 or finer than 0.01.
    public static func basisPoints(percent: Double) -> Int? {
        guard percent.isFinite, (0...100).contains(percent) else { return nil }
        let points = (percent * 100).rounded()
        guard abs(points - percent * 100) < 1e-6 else { return nil }
        return Int(points)
    }

    /// `basisPoints` as a percentage.
    public static func percent(basisPoints: Int) -> Double { Double(basisPoints) / 100 }

    /// `basisPoints` as a percentage written for people: `5`, `0.5`, `12.25`.
    public static func percentText(basisPoints: Int) -> String {
        let (whole, hundredths) = basisPoints.quotientAndRemainder(dividingBy: 100)
        if hundredths == 0 { return "\(whole)" }
        if hundredths % 10 == 0 { return "\(whole).\(hundredths / 10)" }
        return "\(whole).\(hundredths < 10 ? "0" : "")\(hundredths)"
    }
}
