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
}
