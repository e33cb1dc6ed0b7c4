import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// An open-loop load: requests started on a fixed schedule whatever the answers' pace (a slow
/// answer does not delay the next request, as wrk's closed loop would), each latency counted from
/// when its request was due, so queueing shows in the percentiles.
enum OpenLoop {
    struct Latencies {
        var milliseconds: [Double]
        var failures: Int

        func percentile(_ fraction: Double) -> Double {
            let sorted = milliseconds.sorted()
            guard !sorted.isEmpty else { return .nan }
            return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
        }
    }

    /// `rate` GETs a second of `url` for `seconds`, the `index`th with `headers(index)`; a non-2xx
    /// answer is a failure.
    static func run(
        _ client: HTTPClient, url: String, headers: @escaping @Sendable (Int) -> [(String, String)], rate: Int, seconds: Int
    ) async -> Latencies {
        let results = Collected()
        let clock = ContinuousClock()
        let start = clock.now
        let interval = Duration.seconds(1) / rate
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<(rate * seconds) {
                let due = start + interval * index
                try? await Task.sleep(until: due)
                group.addTask {
                    var request = HTTPClientRequest(url: url)
                    for (name, value) in headers(index) { request.headers.add(name: name, value: value) }
                    do {
                        let response = try await client.execute(request, timeout: .seconds(10))
                        _ = try await response.body.collect(upTo: 1 << 20)
                        let elapsed = (clock.now - due) / .milliseconds(1)
                        results.latencies.withLock { latencies in
                            if (200..<300).contains(response.status.code) { latencies.milliseconds.append(elapsed) } else { latencies.failures += 1 }
                        }
                    } catch {
                        results.latencies.withLock { $0.failures += 1 }
                    }
                }
            }
        }
        return results.latencies.withLock { $0 }
    }

    /// The latencies the requests' tasks add to.
    final class Collected: Sendable {
        let latencies = Mutex(Latencies(milliseconds: [], failures: 0))
    }

    /// Time to the first body byte of `count` GETs of `url`, one at a time, in milliseconds.
    static func firstByte(_ client: HTTPClient, url: String, headers: [(String, String)], count: Int) async throws -> Latencies {
        var latencies = Latencies(milliseconds: [], failures: 0)
        let clock = ContinuousClock()
        for _ in 0..<count {
            var request = HTTPClientRequest(url: url)
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            let sent = clock.now
            let response = try await client.execute(request, timeout: .seconds(10))
            var body = response.body.makeAsyncIterator()
            guard response.status == .ok, try await body.next() != nil else {
                latencies.failures += 1
                continue
            }
            latencies.milliseconds.append((clock.now - sent) / .milliseconds(1))
            while try await body.next() != nil {}
        }
        return latencies
    }
}
