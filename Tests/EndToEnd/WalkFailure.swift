/// A step of the walk found Sesame doing something other than what a user relies on.
struct WalkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Fails the step unless `condition` holds.
func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw WalkFailure(message()) }
}

/// Polls `probe` until it returns true, failing after `timeout`.
func eventually(_ what: String, timeout: Duration = .seconds(30), every pause: Duration = .milliseconds(20),
                _ probe: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await probe() { return }
        if ContinuousClock.now > deadline { throw WalkFailure("\(what): not within \(timeout)") }
        try await Task.sleep(for: pause)
    }
}
