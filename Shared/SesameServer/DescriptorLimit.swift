#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's open-descriptor limit. Every live-config stream, client connection and pooled
/// PostgreSQL connection is a descriptor; Linux starts processes at a soft limit of 1,024 (systemd
/// and Docker often too), far below what a delivery replica holds (`SESAME_STREAMS_PER_REPLICA`,
/// 20,000). The hard limit is the operator's ceiling: a service raises its soft limit to it at start.
public enum DescriptorLimit {
    /// Raises the soft limit to the hard one (capped at `ceiling`); returns the limit now in force,
    /// or nil when it cannot be read.
    @discardableResult
    public static func raise(ceiling: UInt64 = 1 << 20) -> UInt64? {
        var limit = rlimit()
        guard getrlimit(resourceNoFile, &limit) == 0 else { return nil }
        let wanted = min(UInt64(limit.rlim_max), ceiling)
        if UInt64(limit.rlim_cur) < wanted {
            var raised = limit
            raised.rlim_cur = rlim_t(wanted)
            if setrlimit(resourceNoFile, &raised) == 0 { return wanted }
        }
        return UInt64(limit.rlim_cur)
    }

    /// The soft limit now, or nil when it cannot be read.
    public static var current: UInt64? {
        var limit = rlimit()
        guard getrlimit(resourceNoFile, &limit) == 0 else { return nil }
        return UInt64(limit.rlim_cur)
    }

    #if canImport(Glibc)
    private static let resourceNoFile = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resourceNoFile = RLIMIT_NOFILE
    #endif
}
