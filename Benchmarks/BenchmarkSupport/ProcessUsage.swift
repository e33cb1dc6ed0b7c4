import Foundation

/// CPU time (user + system) and resident memory of processes, from /proc.
public enum CPUTime {
    /// Of one process (`self` or a pid); with `reapedChildren`, also of its children that have
    /// exited and been waited for (`cutime` and `cstime`).
    public static func ofProcess(_ pid: String, reapedChildren: Bool = false) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let afterName = stat.range(of: ") ", options: .backwards)
        else { return 0 }
        // Fields after the command name start at field 3: utime, stime, cutime and cstime are fields 14 to 17.
        let fields = stat[afterName.upperBound...].split(separator: " ")
        guard fields.count > 14 else { return 0 }
        let ticks = fields[11...(reapedChildren ? 14 : 12)].compactMap { Double($0) }.reduce(0, +)
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Of PostgreSQL: every running process named `postgres`, and the backends that have exited
    /// (the postmaster reaps them, so their time is in its children's). Without the exited ones, a
    /// backend or autovacuum worker that ends during a measurement takes its whole time out of it.
    public static func ofPostgres() -> Double {
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.filter { Int($0) != nil } ?? []
        return pids.filter { (try? String(contentsOfFile: "/proc/\($0)/comm", encoding: .utf8))?.hasPrefix("postgres") == true }
            .map { ofProcess($0, reapedChildren: true) }.reduce(0, +)
    }
}

/// Resident memory of processes, from /proc.
public enum ResidentMemory {
    /// `VmRSS` of a process, in MiB; 0 when it cannot be read.
    public static func ofProcess(_ pid: Int32) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap({ Double($0) })
        else { return 0 }
        return kilobytes / 1024
    }
}
