import Hummingbird
import ServiceLifecycle
import SesameHTTP
import SesameServer

/// The `sesame-delivery` service: its name, default port and routes.
public enum DeliveryService: SesameServiceDefinition {
    public static let name = "delivery"
    public static let defaultPort = 8082

    public static func configure(_ router: Router<SesameRequestContext>, dependencies: ServiceDependencies) throws -> [any Service] { [] }
}
