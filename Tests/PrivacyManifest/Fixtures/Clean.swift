// Nothing here is a required-reason API. Not compiled: read by `--self-test`.
import Foundation

let now = Date()
let exists = FileManager.default.fileExists(atPath: "/tmp")
