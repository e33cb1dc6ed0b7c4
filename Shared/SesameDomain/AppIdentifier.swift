/// An app as Apple identifies it: `TEAMID.bundle.id`, the App Attest app id.
public struct AppIdentifier: Sendable, Hashable, CustomStringConvertible {
    /// The 10-character Apple developer team id.
    public let teamID: String
    /// The bundle identifier.
    public let bundleID: String

    /// Why an identifier was refused.
    public struct Invalid: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Validates `teamID` (10 upper-case letters or digits) and `bundleID` (letters, digits, `-`
    /// and `.`, at most 155 characters, as Apple allows).
    public init(teamID: String, bundleID: String) throws(Invalid) {
        guard teamID.utf8.count == 10, teamID.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }) else {
            throw Invalid(description: "teamId must be the 10-character Apple team id (upper-case letters and digits)")
        }
        let allowed: (UInt8) -> Bool = { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2D || byte == 0x2E
        }
        guard (1...155).contains(bundleID.utf8.count), bundleID.utf8.allSatisfy(allowed), !bundleID.hasPrefix("."),
            !bundleID.hasSuffix("."), !bundleID.contains("..")
        else {
            throw Invalid(description: "bundleId must be a bundle identifier such as com.example.app (letters, digits, '-' and '.')")
        }
        self.teamID = teamID
        self.bundleID = bundleID
    }

    /// `TEAMID.bundle.id`.
    public var description: String { "\(teamID).\(bundleID)" }
}
