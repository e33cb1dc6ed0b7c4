import ArgumentParser
import AuthService
import SesameServer

/// Entry point of `sesame-auth`: `serve` (default) or `migrate`.
@main
enum App {
    static func main() {
        ServiceMain.run(ServiceCommand<AuthService>.self)
    }
}
