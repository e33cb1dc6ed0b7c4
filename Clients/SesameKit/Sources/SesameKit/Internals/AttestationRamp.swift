import Crypto
import Foundation

/// The app's attestation ramp, on the device: each install has a place from 0 to 100, from a random
/// id it keeps (new after a reinstall), and attests only while its place is below the ramp Sesame
/// announces; the others use the unattested tier. As the team widens the ramp, installs move in
/// (none moves out: an attested install keeps its key).
enum AttestationRamp {
    /// The place of `installID` among `appID`'s installs, from 0 (inclusive) to 100 (exclusive):
    /// uniform over random ids, and independent across apps.
    static func place(installID: String, appID: String) -> Double {
        let digest = Array(SHA256.hash(data: Data("\(appID)|\(installID)".utf8)))
        let value = digest.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return Double(value) / 4_294_967_296 * 100
    }

    /// Whether the install attests under a ramp of `percent`.
    static func admits(installID: String, appID: String, percent: Double) -> Bool {
        percent >= 100 || place(installID: installID, appID: appID) < percent
    }
}
