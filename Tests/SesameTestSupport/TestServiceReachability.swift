import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether the PostgreSQL and broker the test command started answer at all, asked once per test
/// process and address, so that `swift test` run alone (or after the services died) fails every
/// integration test at once with one sentence instead of each test's connection retries and
/// timeouts.
enum TestServiceReachability {
    private static let answers = Mutex<[String: Bool]>([:])

    /// Throws `TestDatabase.Unavailable` naming `what`, its address and `variable` when nothing
    /// accepts a TCP connection there within a second.
    static func require(_ what: String, host: String, port: Int, variable: String) throws {
        let address = "\(host):\(port)"
        let answered = answers.withLock { known in
            if let answer = known[address] { return answer }
            // A blocking connect, once per address and process: a local address accepts or refuses
            // at once, and the poll bounds anything else to a second.
            let answer = accepts(host: host, port: port, timeoutMilliseconds: 1000)
            known[address] = answer
            return answer
        }
        guard answered else {
            throw TestDatabase.Unavailable(
                description: "\(what) at \(address) (\(variable)) is not answering: integration tests need the PostgreSQL and "
                    + "broker that ./sesame-dev test starts. Run the tests with ./sesame-dev test [--filter NAME]")
        }
    }

    private static func accepts(host: String, port: Int, timeoutMilliseconds: Int32) -> Bool {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else { return false }
        defer { freeaddrinfo(found) }
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            candidate = info.pointee.ai_next
            let descriptor = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
            guard descriptor >= 0 else { continue }
            defer { close(descriptor) }
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
            if connect(descriptor, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return true }
            guard errno == EINPROGRESS else { continue }
            var waiting = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
            guard poll(&waiting, 1, timeoutMilliseconds) == 1 else { continue }
            var failure: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &failure, &length) == 0, failure == 0 { return true }
        }
        return false
    }
}
