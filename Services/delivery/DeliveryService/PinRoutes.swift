import Foundation
import HTTPTypes
import Hummingbird
import SesameHTTP

/// `GET /v1/pins/{teamId}.{bundleId}.json`: the app's signed SPKI pin registry, in the SslPinning
/// SDK's format. No token: an app needs it before it trusts the connection that would carry one.
/// Served from memory, limited per client address.
struct PinRoutes: Sendable {
    let gate: AccessGate

    static let notFound = APIError(.notFound, code: DeliveryErrorCode.noPins, message: "No pin registry is published for this app.")

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.get("{file}") { request, context in try respond(to: request, context: context) }
    }

    func respond(to request: Request, context: SesameRequestContext, now: Date = Date()) throws -> Response {
        try gate.limitClient(request, context: context)
        guard let file = context.parameters.get("file"), file.hasSuffix(".json"),
            let registry = try gate.cache.state(of: String(file.dropLast(5)))?.pinRegistry?.current(at: now)
        else { throw Self.notFound }
        // Apps fetch it at launch; a few minutes of caching keeps a rotation quick to reach them.
        var headers: HTTPFields = [.eTag: registry.etag, .cacheControl: "public, max-age=300"]
        if let ifNoneMatch = request.headers[.ifNoneMatch], EntityTag.matches(ifNoneMatch: ifNoneMatch, registry.etag) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = "application/json"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: registry.bytes)))
    }
}
