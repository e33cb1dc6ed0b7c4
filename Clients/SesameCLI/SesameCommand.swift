import ArgumentParser

/// `sesame`: the command developers and CI run.
public struct SesameCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "sesame",
        abstract: "Sesame: ship an iOS app with no secrets inside.",
        subcommands: [AttestCommand.self]
    )

    public init() {}
}
