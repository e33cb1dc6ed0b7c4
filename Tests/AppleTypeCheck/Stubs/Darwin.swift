// What Foundation has on Apple platforms only and SesameKit calls there (under `#if
// canImport(Darwin)`, and the Apple branch of `HTTPStreaming`): Apple's published Swift signatures
// with their `@available` lines, added to Linux's Foundation. A file that calls them imports
// Darwin under `#if canImport(Darwin)` (a no-op on Apple platforms, where Foundation has them).
// Bodies never run. Not a product; nothing links it.
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension ProcessInfo {
    @available(iOS 8.2, macOS 10.10.3, tvOS 9.0, watchOS 2.0, *)
    public func performExpiringActivity(withReason reason: String, using block: @escaping @Sendable (Bool) -> Void) {
        fatalError("a type-checking stub")
    }
}

extension URLSession {
    /// The bytes of a response as they arrive.
    @available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, *)
    public struct AsyncBytes: AsyncSequence, @unchecked Sendable {
        public typealias Element = UInt8

        public struct AsyncIterator: AsyncIteratorProtocol {
            public mutating func next() async throws -> UInt8? { fatalError("a type-checking stub") }
        }

        public var task: URLSessionDataTask { fatalError("a type-checking stub") }
        public func makeAsyncIterator() -> AsyncIterator { fatalError("a type-checking stub") }
    }

    @available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, *)
    public func bytes(for request: URLRequest, delegate: (any URLSessionTaskDelegate)? = nil) async throws -> (URLSession.AsyncBytes, URLResponse) {
        fatalError("a type-checking stub")
    }
}
