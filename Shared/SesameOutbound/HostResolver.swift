import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Resolves the host names of addresses users configured (relay upstreams, webhooks, JWKS), apart
/// from everything else the process does: `getaddrinfo` blocks a thread for as long as a slow
/// resolver takes, so its lookups run on a pool of their own, never the cooperative pool or NIO's
/// shared blocking pool (which file I/O and other lookups use). Bounded:
///
/// - one lookup per name at a time: callers asking for a name being looked up wait for that one
///   (a burst of calls to a relay whose client expired resolves it once);
/// - a caller waits at most `deadline` (a lookup cannot be interrupted; its thread finishes it, and
///   the next caller for that name shares it);
/// - at most `maxLookups` names are looked up at once; past them a name not already being looked up
///   is refused at once (one app's upstreams on a dead resolver cannot queue everyone's behind them).
public final class HostResolver: Sendable {
    /// The process's resolver for outbound calls: 4 threads, 5 s, 64 names at once.
    public static let shared = HostResolver()

    public let deadline: Duration
    public let maxLookups: Int
    private let pool: NIOThreadPool
    private let lookUp: @Sendable (String) -> [String]

    private typealias Waiter = CheckedContinuation<[String], any Error>
    private struct State {
        /// The callers waiting for each name being looked up, by caller.
        var lookups: [String: [UInt64: Waiter]] = [:]
        /// Callers whose wait is registered (or over), until they return.
        var registered: Set<UInt64> = []
        /// Callers that gave up before they were registered.
        var abandoned: Set<UInt64> = []
        var nextCaller: UInt64 = 0
    }
    private let state = Mutex(State())

    /// - Parameter lookUp: the blocking lookup (`getaddrinfo`; tests give a scripted one).
    public init(
        threads: Int = 4, deadline: Duration = .seconds(5), maxLookups: Int = 64,
        lookUp: @escaping @Sendable (String) -> [String] = HostResolver.systemLookUp
    ) {
        self.deadline = deadline
        self.maxLookups = maxLookups
        self.lookUp = lookUp
        pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
    }

    /// The addresses `host` resolves to (itself when it is an address), within `deadline`.
    /// Throws `OutboundHTTPClient.Refusal.unresolvable` when it resolves to nothing or too many
    /// names are being looked up, `.timedOut` past the deadline.
    public func addresses(of host: String) async throws -> [String] {
        if OutboundAddressPolicy.isAddress(host) { return [host] }
        let deadline = self.deadline
        let addresses = try await withThrowingTaskGroup(of: [String]?.self) { group in
            group.addTask { try await self.wait(for: host) }
            group.addTask {
                try await Task.sleep(for: deadline)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let addresses = first else { throw OutboundHTTPClient.Refusal.timedOut(deadline) }
            return addresses
        }
        guard !addresses.isEmpty else { throw OutboundHTTPClient.Refusal.unresolvable(host) }
        return addresses
    }

    /// Names being looked up now (for tests).
    public var lookupsInFlight: Int { state.withLock(\.lookups.count) }

    /// Callers waiting for a lookup now (for tests).
    public var callersWaiting: Int { state.withLock { $0.lookups.values.reduce(0) { $0 + $1.count } } }

    /// Joins the lookup of `host` under way, or starts one; returns when it ends or throws when the
    /// caller is cancelled (its deadline), leaving the lookup to finish for the others.
    private func wait(for host: String) async throws -> [String] {
        let caller = state.withLock { state in
            state.nextCaller += 1
            return state.nextCaller
        }
        defer { state.withLock { _ = $0.registered.remove(caller) } }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: Waiter) in
                enum Next { case wait, start, refuse, cancelled }
                let next = state.withLock { state -> Next in
                    state.registered.insert(caller)
                    if state.abandoned.remove(caller) != nil { return .cancelled }
                    if state.lookups[host] != nil {
                        state.lookups[host]?[caller] = waiter
                        return .wait
                    }
                    guard state.lookups.count < maxLookups else { return .refuse }
                    state.lookups[host] = [caller: waiter]
                    return .start
                }
                switch next {
                case .wait: break
                case .start: start(host)
                case .refuse: waiter.resume(throwing: OutboundHTTPClient.Refusal.unresolvable(host))
                case .cancelled: waiter.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                if let waiter = state.lookups[host]?.removeValue(forKey: caller) { return waiter }
                // Not registered yet: its registration finds it gave up. (Registered and already
                // answered: nothing to do.)
                if !state.registered.contains(caller) { state.abandoned.insert(caller) }
                return nil
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Looks `host` up on the pool and hands the answer to everyone still waiting for it.
    private func start(_ host: String) {
        pool.submit { [lookUp] _ in
            let addresses = lookUp(host)
            let waiters = self.state.withLock { $0.lookups.removeValue(forKey: host) } ?? [:]
            for waiter in waiters.values { waiter.resume(returning: addresses) }
        }
    }

    /// `getaddrinfo`'s addresses of `host`, as text, each once; none when it does not resolve.
    @Sendable public static func systemLookUp(_ host: String) -> [String] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(first) }
        var addresses: [String] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if let text = text(of: entry.pointee.ai_addr, family: entry.pointee.ai_family), !addresses.contains(text) {
                addresses.append(text)
            }
            cursor = entry.pointee.ai_next
        }
        return addresses
    }

    private static func text(of address: UnsafeMutablePointer<sockaddr>?, family: Int32) -> String? {
        guard let address else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let written: UnsafePointer<CChar>?
        switch family {
        case AF_INET:
            written = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                var raw = v4.pointee.sin_addr
                return inet_ntop(AF_INET, &raw, &buffer, socklen_t(buffer.count))
            }
        case AF_INET6:
            written = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                var raw = v6.pointee.sin6_addr
                return inet_ntop(AF_INET6, &raw, &buffer, socklen_t(buffer.count))
            }
        default: return nil
        }
        guard written != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
