/// The App Attest environment a key was created in, read from the authenticator data's AAGUID.
public enum AppAttestEnvironment: String, Sendable, Codable, CaseIterable {
    /// `appattestdevelop`: development builds.
    case development
    /// `appattest` followed by seven zero bytes: TestFlight and App Store builds.
    case production

    /// The 16-byte AAGUID Apple writes for this environment.
    public var aaguid: [UInt8] {
        switch self {
        case .development: Array("appattestdevelop".utf8)
        case .production: Array("appattest".utf8) + [UInt8](repeating: 0, count: 7)
        }
    }

    /// The environment whose AAGUID is `bytes`, if any.
    public init?(aaguid bytes: ArraySlice<UInt8>) {
        guard let match = Self.allCases.first(where: { $0.aaguid.elementsEqual(bytes) }) else { return nil }
        self = match
    }
}
