import Crypto
import Foundation

/// Keys for one purpose each, derived from the master key (HKDF-SHA256), so a key used for links
/// or ids never equals one used for data.
public enum PurposeKey {
    /// The 256-bit key for `purpose` (e.g. `"sesame blob links"`) under `masterKey`.
    public static func derive(from masterKey: [UInt8], purpose: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: masterKey), info: Data(purpose.utf8), outputByteCount: 32)
    }
}
