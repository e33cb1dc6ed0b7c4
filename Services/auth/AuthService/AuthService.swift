import Hummingbird
import SesameHTTP
import SesameServer

/// The `sesame-auth` service: its name, default port and routes.
public enum AuthService: SesameServiceDefinition {
    public static let name = "auth"
    public static let defaultPort = 8081

    public static func addRoutes(to router: Router<SesameRequestContext>, dependencies: ServiceDependencies) {}
}
