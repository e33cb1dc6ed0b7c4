import Synchronization

/// How many relay calls are open at once, each bounded so one tenant cannot hold a replica's
/// calls: at most `perInstall` for one token subject (an attested but abusive install), `perAddress`
/// for one client address (an unattested caller gets a new subject at each exchange; an IPv6
/// client counts by its /64), `perApp` for one app (its share of the replica) and
/// `perReplica` in all. A slot is given back when the call's response has been written, or when
/// it is dropped unwritten.
final class RelayCallSlots: Sendable {
    static let defaultPerInstall = 8
    static let defaultPerAddress = 64
    static let defaultPerApp = 1_000
    static let defaultPerReplica = 4_000

    /// Who a call is counted against.
    struct Caller: Sendable {
        let subject: String
        let appID: String
        let address: String

        /// Its counters' keys, each with the limit it has.
        fileprivate func keys(in slots: RelayCallSlots) -> [(key: String, limit: Int)] {
            [("s:" + subject, slots.perInstall), ("a:" + address, slots.perAddress), ("p:" + appID, slots.perApp)]
        }
    }

    let perInstall: Int
    let perAddress: Int
    let perApp: Int
    let perReplica: Int
    private let open = Mutex<(total: Int, byKey: [String: Int])>((0, [:]))

    init(
        perInstall: Int = RelayCallSlots.defaultPerInstall, perAddress: Int = RelayCallSlots.defaultPerAddress,
        perApp: Int = RelayCallSlots.defaultPerApp, perReplica: Int = RelayCallSlots.defaultPerReplica
    ) {
        self.perInstall = perInstall
        self.perAddress = perAddress
        self.perApp = perApp
        self.perReplica = perReplica
    }

    /// A slot for `caller`, or nil when its install, its address, its app or the replica has none free.
    func take(for caller: Caller) -> Slot? {
        let keys = caller.keys(in: self)
        let total = open.withLock { open -> Int? in
            guard open.total < perReplica, keys.allSatisfy({ open.byKey[$0.key, default: 0] < $0.limit }) else { return nil }
            open.total += 1
            for (key, _) in keys { open.byKey[key, default: 0] += 1 }
            return open.total
        }
        guard let total else { return nil }
        RelayMetrics.openCalls(total)
        return Slot(slots: self, keys: keys.map(\.key))
    }

    /// The calls open now under `caller`'s install, address and app.
    func openCalls(of caller: Caller) -> [Int] {
        open.withLock { open in caller.keys(in: self).map { open.byKey[$0.key, default: 0] } }
    }

    fileprivate func give(back keys: [String]) {
        let total = open.withLock { open in
            open.total -= 1
            for key in keys {
                let left = open.byKey[key, default: 1] - 1
                open.byKey[key] = left > 0 ? left : nil
            }
            return open.total
        }
        RelayMetrics.openCalls(total)
    }

    /// One open call; given back once, when released or dropped.
    final class Slot: Sendable {
        private let slots: RelayCallSlots
        private let keys: [String]
        private let released = Atomic(false)

        fileprivate init(slots: RelayCallSlots, keys: [String]) {
            self.slots = slots
            self.keys = keys
        }

        func release() {
            if !released.exchange(true, ordering: .relaxed) { slots.give(back: keys) }
        }

        deinit { release() }
    }
}
