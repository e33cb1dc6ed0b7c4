import Foundation

/// The Kafka-protocol broker the test command started (Tansu), and private brokers for tests that
/// stop and start one. Never skips: without a broker the test fails and says how to run it.
public enum TestKafka {
    /// The variable the test command sets: the shared broker's `host:port`.
    public static let brokersVariable = "SESAME_TEST_KAFKA_BROKERS"
    /// The variable the test command sets: the Tansu executable, for private brokers.
    public static let tansuVariable = "SESAME_TEST_TANSU_BIN"

    /// The shared broker's bootstrap servers.
    public static func brokers() throws -> [String] {
        guard let text = ProcessInfo.processInfo.environment[brokersVariable], !text.isEmpty else {
            throw TestDatabase.Unavailable(
                description: "\(brokersVariable) is not set: integration tests need a Kafka broker. Run them with ./sesame-dev test")
        }
        let brokers = text.split(separator: ",").map(String.init)
        if let first = brokers.first, let colon = first.lastIndex(of: ":"), let port = Int(first[first.index(after: colon)...]) {
            try TestServiceReachability.require("The Kafka broker", host: String(first[..<colon]), port: port, variable: brokersVariable)
        }
        return brokers
    }

    /// A topic name no other test uses.
    public static func uniqueTopic(_ prefix: String = "test") -> String {
        "\(prefix).\(UUID().uuidString.prefix(8).lowercased())"
    }
}

/// A Tansu broker of the test's own, on a free port, that the test can stop and start again.
/// Its storage is in memory: a restarted broker starts with no topics and no messages.
public final class TansuBroker: @unchecked Sendable {
    // @unchecked Sendable: `process` is only touched by the test that owns the broker, sequentially.
    private let executable: String
    /// The port it listens on, the same across restarts.
    public let port: Int
    private var process: Process?

    /// `host:port` for clients.
    public var brokers: [String] { ["127.0.0.1:\(port)"] }

    /// Starts a broker; fails loudly if the test command did not say where Tansu is.
    public init() throws {
        guard let executable = ProcessInfo.processInfo.environment[TestKafka.tansuVariable], !executable.isEmpty else {
            throw TestDatabase.Unavailable(
                description: "\(TestKafka.tansuVariable) is not set: this test runs its own broker. Run it with ./sesame-dev test")
        }
        self.executable = executable
        self.port = try FreePort.find()
        try start()
    }

    deinit {
        stop()
    }

    /// Starts the broker and waits until it accepts connections.
    public func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        let listener = "tcp://127.0.0.1:\(port)"
        process.arguments = [
            "broker", "--listener-url", listener, "--advertised-listener-url", listener, "--storage-engine", "memory://tansu/",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            if FreePort.accepts(port: port) { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw TestDatabase.Unavailable(description: "Tansu did not start listening on port \(port) within 15 s")
    }

    /// Kills the broker (as a crash would; Tansu ignores SIGTERM) and waits until it has exited.
    public func stop() {
        guard let process else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }
}

/// Finding a free local port, and checking whether something listens on one.
public enum FreePort {
    /// A port the kernel just said was free.
    public static func find() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw TestDatabase.Unavailable(description: "socket() failed") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(socket, generic, length) == 0 && getsockname(socket, generic, &length) == 0
            }
        }
        guard bound else { throw TestDatabase.Unavailable(description: "could not find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether a TCP connection to 127.0.0.1:`port` succeeds.
    public static func accepts(port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
