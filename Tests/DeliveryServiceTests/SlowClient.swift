#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A client that sends a request's head and only part of the body it declares, then waits for
/// the answer: what a slow or stalled uploader does to a server. Blocking socket calls, on a
/// thread of its own; the read gives up after `readTimeout` seconds (an empty answer).
enum SlowClient {
    static func post(
        port: Int, path: String, headers: [String: String], declaredLength: Int, sent: String, readTimeout: Int = 10
    ) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try exchange(port: port, path: path, headers: headers, declaredLength: declaredLength, sent: sent, readTimeout: readTimeout) })
            }
        }
    }

    struct SocketError: Error {
        let call: String
    }

    private static func exchange(port: Int, path: String, headers: [String: String], declaredLength: Int, sent: String, readTimeout: Int) throws -> String {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw SocketError(call: "socket") }
        defer { close(socket) }
        var timeout = timeval(tv_sec: readTimeout, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw SocketError(call: "connect") }
        var request = "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(declaredLength)\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        request += "\r\n" + sent
        let bytes = Array(request.utf8)
        guard write(socket, bytes, bytes.count) == bytes.count else { throw SocketError(call: "write") }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(socket, &buffer, buffer.count)
            guard count > 0 else { break }
            answer += buffer[0..<count]
            // The head and a JSON error body are enough.
            if let text = String(bytes: answer, encoding: .utf8), text.contains("\r\n\r\n"), text.hasSuffix("}") { break }
        }
        return String(decoding: answer, as: UTF8.self)
    }
}
