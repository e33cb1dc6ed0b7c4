/// Reads elements of `sequence` until `done` says enough, or fails after `timeout`.
public func collect<Sequence: AsyncSequence & Sendable>(
    from sequence: Sequence, timeout: Duration, what: String, until done: @escaping @Sendable ([Sequence.Element]) -> Bool
) async throws -> [Sequence.Element] where Sequence.Element: Sendable {
    try await withThrowingTaskGroup(of: [Sequence.Element]?.self) { group in
        group.addTask {
            var received: [Sequence.Element] = []
            for try await element in sequence {
                received.append(element)
                if done(received) { break }
            }
            return received
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let received = first else {
            throw TestDatabase.Unavailable(description: "timed out waiting for \(what)")
        }
        return received
    }
}
