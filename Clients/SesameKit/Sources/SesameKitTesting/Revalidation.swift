import SesameKit

extension SesameClient {
    /// Returns once every background revalidation the client started so far (a launch's first
    /// fetch of a stale saved config) has finished: the next `fetchConfig` serves what Sesame said.
    /// A test hook, so it lives here and not in SesameKit.
    public func waitForBackgroundRevalidation() async {
        await backgroundRevalidationsFinished()
    }
}
