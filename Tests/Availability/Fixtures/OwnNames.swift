// A name the code declares itself hides the framework's only where it is the code's own: a member
// whose receiver's declared type is the code's, not every use of the name. Initializers and
// trailing-closure calls are seen. At iOS 16 / macOS 13. Not compiled: read by
// `check_availability.py --self-test`. A line marked `flags: NAME` must be caught.
import Foundation
import Synchronization

final class Locked<Value> {
    func withLock<Result>(_ body: (inout Value) -> Result) -> Result { fatalError() }
}

struct Link {
    let string: String
}

struct Box {
    let state = Locked<Int>()
    let mutex = Mutex<Int>(0)  // flags: Mutex

    func use(other: Locked<Int>, span: UTF8Span) {  // flags: UTF8Span
        state.withLock { _ in }
        other.withLock { _ in }
        mutex.withLock { _ in }  // flags: withLock
        _ = URL(string: "https://example.com", encodingInvalidCharacters: false)  // flags: URL
        _ = String(copying: span)  // flags: String
        _ = Task.immediateDetached { }  // flags: immediateDetached
        if #available(iOS 26, macOS 26, *) {
            _ = String(copying: span)
            _ = Task.immediateDetached { }
        }
    }
}
