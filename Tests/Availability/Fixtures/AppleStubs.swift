// floors: iOS 12, macOS 10.14
// The Apple frameworks' availability comes from the stubs the Apple type-check compiles against
// (Tests/AppleTypeCheck/Stubs). At iOS 12 / macOS 10.14, as this line's floors say. Not compiled:
// read by `check_availability.py --self-test`. A line marked `flags: NAME` must be caught.
import DeviceCheck
import Foundation
import Security

func attestIfPossible() {
    let service = DCAppAttestService.shared  // flags: DCAppAttestService
    _ = service
    let query: [String: Any] = [kSecUseDataProtectionKeychain as String: true]  // flags: kSecUseDataProtectionKeychain
    _ = query
    if #available(iOS 14, macOS 11, *) {
        _ = DCAppAttestService.shared
    }
    _ = SecItemDelete([:])
}
