import ArgumentParser
import Foundation
import NIOCore
import NIOPosix

/// The services' entry point, synchronous so that where Swift tasks run can be chosen before the
/// first one starts: with `SESAME_EXECUTOR=nio`, on NIO's event loops (the threads that already
/// read the sockets and PostgreSQL's replies) instead of Dispatch's global queue, which saves a
/// thread hop at every await on the network. It can only be installed before any task exists,
/// which an `async` main is too late for.
public enum ServiceMain {
    /// Runs `command` (a service's `ServiceCommand`) to its end, then exits.
    public static func run<Service: SesameServiceDefinition>(_ command: ServiceCommand<Service>.Type) -> Never {
        if ProcessInfo.processInfo.environment["SESAME_EXECUTOR"] == "nio" {
            guard NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() else {
                FileHandle.standardError.write(Data("SESAME_EXECUTOR=nio: NIO's event loops could not become the global executor\n".utf8))
                exit(EX_SOFTWARE)
            }
        }
        Task {
            await command.main()
            exit(EXIT_SUCCESS)
        }
        dispatchMain()
    }
}
