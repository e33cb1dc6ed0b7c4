import Foundation

/// How many distinct items were seen, approximately, in fixed memory: HyperLogLog (Flajolet,
/// Fusy, Gandouet and Meunier, 2007) with 4,096 one-byte registers, a standard error of about
/// 1.6 %, exact-ish for small counts (linear counting). Sketches of the same items made apart
/// (one per delivery replica) merge into the sketch of their union, so replicas never double count.
public struct DistinctCount: Sendable, Equatable {
    /// Bits of an item's hash that pick its register.
    public static let precision = 12
    public static var registerCount: Int { 1 << precision }

    /// Per register, the most leading zeros (plus one) seen in the hashes it was given.
    public private(set) var registers: [UInt8]

    public init() {
        registers = [UInt8](repeating: 0, count: Self.registerCount)
    }

    /// A sketch as stored; nil when it is not one.
    public init?(registers: [UInt8]) {
        guard registers.count == Self.registerCount, registers.allSatisfy({ $0 <= 64 - Self.precision + 1 }) else { return nil }
        self.registers = registers
    }

    /// Counts an item by a uniform 64-bit hash of it; the same item again changes nothing.
    /// Whether the sketch changed.
    @discardableResult
    public mutating func insert(hash: UInt64) -> Bool {
        let index = Int(hash >> (64 - Self.precision))
        let rank = UInt8(min((hash << Self.precision).leadingZeroBitCount, 64 - Self.precision) + 1)
        guard rank > registers[index] else { return false }
        registers[index] = rank
        return true
    }

    /// Adds what `other` saw.
    public mutating func merge(_ other: DistinctCount) {
        for index in registers.indices where other.registers[index] > registers[index] { registers[index] = other.registers[index] }
    }

    /// The estimated number of distinct items.
    public var estimate: Int {
        let count = Double(registers.count)
        var sum = 0.0
        var empty = 0
        for register in registers {
            sum += 1 / Double(UInt64(1) << register)
            if register == 0 { empty += 1 }
        }
        let raw = 0.7213 / (1 + 1.079 / count) * count * count / sum
        // Few items: most registers are still empty, and counting them is the better estimate.
        if raw <= 2.5 * count, empty > 0 { return Int((count * log(count / Double(empty))).rounded()) }
        return Int(raw.rounded())
    }
}
