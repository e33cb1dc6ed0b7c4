import SesameConfiguration
import Testing

@Suite("Duration in the units other systems take")
struct DurationUnitsTests {
    @Test("seconds keep the fraction; whole units drop it; the rounded-up wait counts any fraction")
    func units() {
        let duration = Duration.seconds(2) + .milliseconds(345) + .nanoseconds(678)
        #expect(abs(duration.inSeconds - 2.345000678) < 1e-12)
        #expect(duration.wholeSeconds == 2)
        #expect(duration.secondsRoundedUp == 3)
        #expect(duration.inMilliseconds == 2345)
        #expect(duration.inNanoseconds == 2_345_000_678)
        #expect(Duration.seconds(5).secondsRoundedUp == 5)
        #expect(Duration.zero.secondsRoundedUp == 0)
        #expect(Duration.seconds(86_400 * 30).inMilliseconds == 2_592_000_000)
    }

    @Test("durations as people write them: seconds or s, m, h, d; anything else is nil; written back in the largest whole unit")
    func written() {
        #expect(Duration(written: "900") == .seconds(900))
        #expect(Duration(written: "15m") == .seconds(900))
        #expect(Duration(written: "12H") == .seconds(43_200))
        #expect(Duration(written: "7d") == .seconds(604_800))
        for bad in ["", "d", "7w", "-1", "1.5h", "7 d", "99999999999999999999"] { #expect(Duration(written: bad) == nil, "\(bad)") }
        #expect(Duration.seconds(604_800).written == "7d")
        #expect(Duration.seconds(5_400).written == "90m")
        #expect(Duration.seconds(61).written == "61s")
    }
}
