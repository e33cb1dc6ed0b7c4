@testable import DeliveryService
import Testing

/// What delivery serves an app from, before and after it has read PostgreSQL.
@Suite("Delivery: the cache fails closed")
struct DeliveryCacheTests {
    @Test("before the first load no app is served, not even as one with nothing published; an app reloaded by an event is")
    func failsClosedBeforeTheFirstLoad() {
        let cache = DeliveryCache()
        #expect(cache.state(of: "TEAMID1234.com.example.app") == nil)

        var loaded = DeliveryLoader.Loaded()
        loaded.states["TEAMID1234.com.example.evented"] = AppState()
        cache.replace("TEAMID1234.com.example.evented", with: loaded)
        #expect(cache.state(of: "TEAMID1234.com.example.evented") != nil)
        #expect(cache.state(of: "TEAMID1234.com.example.app") == nil)

        cache.finishResync(cache.beginResync(), loaded: DeliveryLoader.Loaded(), scope: nil)
        #expect(cache.state(of: "TEAMID1234.com.example.app") != nil, "after the load, an app with nothing is served as such")

        var failed = DeliveryLoader.Loaded()
        failed.failures["TEAMID1234.com.example.broken"] = "cannot be opened"
        cache.replace("TEAMID1234.com.example.broken", with: failed)
        #expect(cache.state(of: "TEAMID1234.com.example.broken") == nil)
    }
}
