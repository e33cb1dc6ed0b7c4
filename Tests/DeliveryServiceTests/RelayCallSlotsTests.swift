@testable import DeliveryService
import Testing

/// A replica's relay calls have a share per install, address and app (issue 72): one tenant, or
/// one address minting unattested installs, cannot hold them all.
@Suite("Delivery: relay call slots")
struct RelayCallSlotsTests {
    @Test("an install, an address (new unattested installs from one address), an app and the replica each stop at their share; a slot given back is free again")
    func sharesPerInstallAddressAndApp() throws {
        let slots = RelayCallSlots(perInstall: 2, perAddress: 3, perApp: 4, perReplica: 5)
        func caller(_ subject: String, _ app: String, _ address: String) -> RelayCallSlots.Caller {
            RelayCallSlots.Caller(subject: subject, appID: app, address: address)
        }
        var held: [RelayCallSlots.Slot] = []
        // One install: two calls.
        for _ in 0..<2 { held.append(try #require(slots.take(for: caller("key", "A", "203.0.113.1")))) }
        #expect(slots.take(for: caller("key", "A", "203.0.113.2")) == nil, "a third call of one install")
        // One address minting a new unattested install at each exchange: its third call overall is its last.
        held.append(try #require(slots.take(for: caller("u1", "A", "198.51.100.7"))))
        held.append(try #require(slots.take(for: caller("u2", "B", "198.51.100.7"))))
        held.append(try #require(slots.take(for: caller("u3", "B", "198.51.100.7"))))
        #expect(slots.take(for: caller("u4", "B", "198.51.100.7")) == nil, "a fourth call from one address")
        // The replica (5) is full now: app C, new install, new address, is refused.
        #expect(slots.take(for: caller("c1", "C", "192.0.2.1")) == nil, "past the replica's calls")
        #expect(slots.openCalls(of: caller("key", "A", "203.0.113.1")) == [2, 2, 3])
        // Given back, free again; app A holds 3 of its 4.
        held.removeLast().release()
        held.append(try #require(slots.take(for: caller("a2", "A", "192.0.2.2"))))
        #expect(slots.openCalls(of: caller("x", "A", "192.0.2.9")) == [0, 0, 4])
        #expect(slots.take(for: caller("a3", "A", "192.0.2.3")) == nil, "past the app's share")
        held.removeAll()
        #expect(slots.openCalls(of: caller("key", "A", "198.51.100.7")) == [0, 0, 0])
    }
}
