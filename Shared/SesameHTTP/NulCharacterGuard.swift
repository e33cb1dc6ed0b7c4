import Foundation
import Hummingbird

/// Refuses text holding a NUL character (U+0000) with a 400 before it reaches a handler.
///
/// Why: PostgreSQL's `text` cannot hold NUL, so a name, reason or lookup key carrying one failed
/// deep in a query as a 500 (found by schemathesis: a device revocation's `reason` with `\u0000`).
/// No Sesame field has a use for it, so it is refused at the edge for every route: in a JSON body
/// (`SesameJSONRequestDecoder`) and in the URL, where it arrives as `%00` (`NulCharacterMiddleware`).
/// HTTP header values cannot carry it (the parser refuses them).
public enum NulCharacterGuard {
    /// The refusal.
    public static let refusal = APIError.invalidRequest("Text may not contain the NUL character (U+0000).")

    /// Whether a JSON text has a string holding `\u0000`. Reads escapes as JSON does, so `\\u0000`
    /// (a backslash, then `u0000`) is not one; a raw NUL byte is not valid JSON and is left to the parser.
    public static func jsonHasNul(_ bytes: some Sequence<UInt8>) -> Bool {
        var inString = false
        var escaped = false
        // How many zeros of a `\u` escape's four hex digits have been read; nil outside one.
        var zeros: Int?
        for byte in bytes {
            if let count = zeros {
                if byte == UInt8(ascii: "0") {
                    if count == 3 { return true }
                    zeros = count + 1
                    continue
                }
                zeros = nil
            }
            if !inString {
                if byte == UInt8(ascii: "\"") { inString = true }
            } else if escaped {
                escaped = false
                if byte == UInt8(ascii: "u") { zeros = 0 }
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inString = false
            }
        }
        return false
    }

    /// Whether a request target (path and query, percent-encoded) decodes to a NUL anywhere.
    public static func uriHasNul(_ target: String) -> Bool {
        // A byte scan: the event loop's fast path asks this of every request it answers.
        var zeros = -1
        for byte in target.utf8 {
            if byte == UInt8(ascii: "%") {
                zeros = 0
            } else if zeros >= 0, byte == UInt8(ascii: "0") {
                zeros += 1
                if zeros == 2 { return true }
            } else {
                zeros = -1
            }
        }
        return false
    }
}

/// Decodes JSON request bodies as Hummingbird's `JSONDecoder` does, refusing a string with a NUL.
public struct SesameJSONRequestDecoder: RequestDecoder {
    public init() {}

    public func decode<T: Decodable>(_ type: T.Type, from request: Request, context: some RequestContext) async throws -> T {
        let buffer = try await request.body.collect(upTo: context.maxUploadSize)
        if NulCharacterGuard.jsonHasNul(buffer.readableBytesView) { throw NulCharacterGuard.refusal }
        return try Self.decoder.decode(T.self, from: Data(buffer.readableBytesView))
    }

    /// One for every request: decoding keeps no state between calls, and its options never change.
    private static let decoder = JSONDecoder()
}

/// Refuses a request whose path or query holds an encoded NUL (`%00`).
public struct NulCharacterMiddleware<Context: RequestContext>: RouterMiddleware {
    public init() {}

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if NulCharacterGuard.uriHasNul(request.uri.description) { throw NulCharacterGuard.refusal }
        return try await next(request, context)
    }
}
