import Foundation

#if canImport(os)
import os
#endif

/// SesameKit's few log lines. They never carry a token, a key or a config value.
enum SesameLog {
    static func warning(_ message: String) {
        #if canImport(os)
        Logger(subsystem: "SesameKit", category: "config").warning("\(message, privacy: .public)")
        #else
        FileHandle.standardError.write(Data(("SesameKit: " + message + "\n").utf8))
        #endif
    }
}
