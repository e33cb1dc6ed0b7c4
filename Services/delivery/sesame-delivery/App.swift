import ArgumentParser
import DeliveryService
import SesameServer

/// Entry point of `sesame-delivery`: `serve` (default) or `migrate`.
@main
enum App {
    static func main() async {
        await ServiceCommand<DeliveryService>.main()
    }
}
