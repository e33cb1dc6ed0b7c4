// What the privacy-manifest check must find. Not compiled: read by `--self-test`.
import Foundation

func elapsed(since start: TimeInterval) -> TimeInterval { ProcessInfo.processInfo.systemUptime - start }  // uses: NSPrivacyAccessedAPICategorySystemBootTime
func remembered() -> Bool { UserDefaults.standard.bool(forKey: "seen") }  // uses: NSPrivacyAccessedAPICategoryUserDefaults
func age(of url: URL) throws -> Date? { try url.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate }  // uses: NSPrivacyAccessedAPICategoryFileTimestamp
// "UserDefaults" in a comment or a string is not a use.
let label = "systemUptime"
