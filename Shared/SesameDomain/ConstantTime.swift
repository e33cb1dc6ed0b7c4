/// Byte comparison whose duration does not depend on where the inputs differ, for credentials,
/// signatures and MACs.
public enum ConstantTime {
    /// Whether `lhs` and `rhs` hold the same bytes; only their lengths may show in the timing.
    public static func equals(_ lhs: some Collection<UInt8>, _ rhs: some Collection<UInt8>) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for (left, right) in zip(lhs, rhs) { difference |= left ^ right }
        return difference == 0
    }
}
