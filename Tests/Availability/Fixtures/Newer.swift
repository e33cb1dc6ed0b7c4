// What the availability check must catch and let through, at iOS 16 / macOS 13. Not compiled:
// read by `check_availability.py --self-test`. A line marked `flags: NAME` must be caught.
import Foundation
import Observation
import Synchronization

final class Counter {
    let count = Mutex<Int>(0)  // flags: Mutex
    let atomic = Atomic<Int>(0)  // flags: Atomic
    // Mutex in a comment is not code.
    let text = "Mutex in a string is not code"
}

@Observable  // flags: Observable
final class Model {}

func waits() async throws {
    try await Task.sleep(for: .seconds(1))  // iOS 16: at the floor
    let clock = ContinuousClock()  // iOS 16: at the floor
    _ = clock
    let regex = try Regex("a+")  // iOS 16: at the floor
    _ = regex
    await withDiscardingTaskGroup { _ in }  // flags: withDiscardingTaskGroup
    let url = URL(fileURLWithPath: "/tmp").appending(path: "x")  // iOS 16, macOS 13: at the floor
    _ = url
    _ = Date.now.formatted()  // iOS 15: below the floor
}

func guarded() async {
    if #available(iOS 18, macOS 15, *) {
        let lock = Mutex<Int>(0)
        _ = lock
    }
    if #available(iOS 18, *) {
        let lock = Mutex<Int>(0)  // flags: Mutex
        _ = lock
    }
    guard #available(iOS 17, macOS 14, *) else { return }
    await withDiscardingTaskGroup { _ in }
}

@available(iOS 18, macOS 15, *)
struct GuardedByAttribute {
    let lock = Mutex<Int>(0)
}

func afterTheGuardedType() {
    let lock = Mutex<Int>(0)  // flags: Mutex
    _ = lock
    let key = HPKE.Ciphersuite.P256_SHA256_AES_GCM_256  // flags: HPKE
    _ = key
}
