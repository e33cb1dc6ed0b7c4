import Synchronization

/// How many relay calls are open at once: at most `perInstall` for one token subject (an attested
/// but abusive install cannot hold a replica's streams) and `perReplica` in all. A slot is given
/// back when the call's response has been written, or when it is dropped unwritten.
final class RelayCallSlots: Sendable {
    static let defaultPerInstall = 8
    static let defaultPerReplica = 4_000

    let perInstall: Int
    let perReplica: Int
    private let open = Mutex<(total: Int, bySubject: [String: Int])>((0, [:]))

    init(perInstall: Int = RelayCallSlots.defaultPerInstall, perReplica: Int = RelayCallSlots.defaultPerReplica) {
        self.perInstall = perInstall
        self.perReplica = perReplica
    }

    /// A slot for `subject`, or nil when it or the replica has none free.
    func take(for subject: String) -> Slot? {
        let total = open.withLock { open -> Int? in
            guard open.total < perReplica, open.bySubject[subject, default: 0] < perInstall else { return nil }
            open.total += 1
            open.bySubject[subject, default: 0] += 1
            return open.total
        }
        guard let total else { return nil }
        RelayMetrics.openCalls(total)
        return Slot(slots: self, subject: subject)
    }

    fileprivate func give(back subject: String) {
        let total = open.withLock { open in
            open.total -= 1
            let left = open.bySubject[subject, default: 1] - 1
            open.bySubject[subject] = left > 0 ? left : nil
            return open.total
        }
        RelayMetrics.openCalls(total)
    }

    /// One open call; given back once, when released or dropped.
    final class Slot: Sendable {
        private let slots: RelayCallSlots
        private let subject: String
        private let released = Atomic(false)

        fileprivate init(slots: RelayCallSlots, subject: String) {
            self.slots = slots
            self.subject = subject
        }

        func release() {
            if !released.exchange(true, ordering: .relaxed) { slots.give(back: subject) }
        }

        deinit { release() }
    }
}
