import SesameCLI

/// The `sesame` executable: everything lives in `SesameCLI`.
@main
enum App {
    static func main() async {
        await SesameCommand.runAndExit()
    }
}
