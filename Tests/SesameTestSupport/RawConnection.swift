import NIOCore
import NIOPosix

/// A client connection that writes raw bytes and ignores the answers: for requests no HTTP client
/// sends (half a head, a byte at a time) and for a client that stops reading.
public struct RawConnection: Sendable {
    let channel: any Channel

    /// Connects to `127.0.0.1:port`. With `reads` false the connection never reads what it is
    /// sent, and its receive buffer is a few KiB: the server's writes to it block, as they do to a
    /// phone that stopped reading.
    public init(port: Int, reads: Bool = true) async throws {
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        if !reads {
            bootstrap = bootstrap.channelOption(.autoRead, value: false).channelOption(.socketOption(.so_rcvbuf), value: 4096)
        }
        channel = try await bootstrap.connect(host: "127.0.0.1", port: port).get()
    }

    /// Whether the connection is still open as far as this side knows (a reading connection learns
    /// of the server's close at once).
    public var isOpen: Bool { channel.isActive }

    public func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text)).get()
    }

    public func close() async {
        try? await channel.close()
    }
}
