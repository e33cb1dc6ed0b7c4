import SesameDomain
import Synchronization
import Testing

@Suite("A bounded memo")
struct BoundedMemoTests {
    struct Refused: Error {}

    @Test("a value is made once per key; a throw is not remembered")
    func madeOnce() throws {
        let memo = BoundedMemo<String, Int>()
        let made = Mutex(0)
        let make: (String) throws -> Int = { key in made.withLock { $0 += 1 }; return key.count }
        #expect(try memo.value(for: "abc", make: make) == 3)
        #expect(try memo.value(for: "abc", make: make) == 3)
        #expect(made.withLock { $0 } == 1)
        #expect(throws: Refused.self) { try memo.value(for: "xy") { _ in throw Refused() } }
        #expect(memo.value(for: "xy") == nil)
        #expect(try memo.value(for: "xy", make: make) == 2)
    }

    @Test("full, it starts again rather than grow; replacing a kept key does not empty it")
    func bounded() {
        let memo = BoundedMemo<Int, String>(capacity: 3)
        for key in 0..<3 { memo.remember("\(key)", for: key) }
        memo.remember("zero", for: 0)
        #expect(memo.value(for: 0) == "zero")
        #expect(memo.value(for: 2) == "2")
        memo.remember("3", for: 3)
        #expect(memo.value(for: 3) == "3")
        #expect((0..<3).allSatisfy { memo.value(for: $0) == nil })
    }
}
