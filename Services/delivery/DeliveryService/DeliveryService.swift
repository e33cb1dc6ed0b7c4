import Hummingbird
import SesameHTTP
import SesameServer

/// The `sesame-delivery` service: its name, default port and routes.
public enum DeliveryService: SesameServiceDefinition {
    public static let name = "delivery"
    public static let defaultPort = 8082

    public static func addRoutes(to router: Router<SesameRequestContext>, dependencies: ServiceDependencies) {}
}
