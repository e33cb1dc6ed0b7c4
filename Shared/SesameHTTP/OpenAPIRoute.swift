import Hummingbird

/// `GET /openapi.json`: the service's OpenAPI document, for integrators, gateways and the fuzzer
/// that holds the service to it.
public struct OpenAPIRoute: Sendable {
    /// The document, as JSON.
    public let document: String

    /// Creates the route serving `document`.
    public init(document: String) {
        self.document = document
    }

    /// Adds the route to `router`.
    public func register<Context: RequestContext>(on router: Router<Context>) {
        let body = ByteBuffer(string: document)
        router.get("/openapi.json") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "public, max-age=300"],
                body: .init(byteBuffer: body))
        }
    }
}
