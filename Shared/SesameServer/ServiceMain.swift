import ArgumentParser
import Foundation
import NIOCore
import NIOPosix

/// The services' entry point, synchronous so that where Swift tasks run can be chosen before the
/// first one starts: by default on NIO's event loops (the threads that already read the sockets
/// and PostgreSQL's replies) instead of Dispatch's global queue, which saves a thread hop at every
/// await on the network; `SESAME_EXECUTOR=dispatch` keeps Dispatch's. It can only be installed
/// before any task exists, which an `async` main is too late for. Measured, and when it can go:
/// `docs/upstream/swift-nio-global-executor.md`.
public enum ServiceMain {
    /// Runs `command` (a service's `ServiceCommand`) to its end, then exits.
    public static func run<Service: SesameServiceDefinition>(_ command: ServiceCommand<Service>.Type) -> Never {
        switch ProcessInfo.processInfo.environment["SESAME_EXECUTOR"] ?? "nio" {
        case "nio":
            guard NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() else {
                fail("NIO's event loops could not become the global executor (set SESAME_EXECUTOR=dispatch to run without them)")
            }
        case "dispatch":
            break
        case let other:
            fail("SESAME_EXECUTOR is \(other); it takes nio (the default) or dispatch")
        }
        Task {
            await command.main()
            exit(EXIT_SUCCESS)
        }
        dispatchMain()
    }

    private static func fail(_ reason: String) -> Never {
        FileHandle.standardError.write(Data("sesame: \(reason)\n".utf8))
        exit(EX_CONFIG)
    }
}
