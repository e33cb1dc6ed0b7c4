import AdminService
import ArgumentParser
import SesameServer

/// Entry point of `sesame-admin`: `serve` (default) or `migrate`.
@main
enum App {
    static func main() async {
        await ServiceCommand<AdminService>.main()
    }
}
