import Hummingbird
import SesameHTTP
import SesameServer

/// The `sesame-admin` service: its name, default port and routes.
public enum AdminService: SesameServiceDefinition {
    public static let name = "admin"
    public static let defaultPort = 8083

    public static func addRoutes(to router: Router<SesameRequestContext>, dependencies: ServiceDependencies) {}
}
