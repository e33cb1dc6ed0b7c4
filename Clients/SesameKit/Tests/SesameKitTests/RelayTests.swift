import Foundation
import SesameKitTesting
import SesameRelayProof
import Testing

@testable import SesameKit

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("SesameClient.relay: third-party calls through an attested relay")
struct RelayTests {
    static func completion(_ relay: SesameRelay, body: String = #"{"prompt":"hi"}"#) -> URLRequest {
        var request = URLRequest(url: relay.baseURL.appendingPathComponent("v1/chat/completions"))
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        request.setValue("kept", forHTTPHeaderField: "X-Custom")
        return request
    }

    static func echo(_ data: Data) throws -> [String: String] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: String])
    }

    @Test("the base URL is under Sesame's; the first call attests, then sends the app's request with the token; the upstream's answer comes back as it is")
    func firstCall() async throws {
        let harness = Harness()
        let relay = harness.client().relay("llm")
        #expect(relay.baseURL.absoluteString == "https://sesame.example.com/v1/relay/llm")
        let (data, response) = try await relay.data(for: Self.completion(relay))
        #expect(response.statusCode == 200)
        let echoed = try Self.echo(data)
        #expect(echoed == ["method": "POST", "path": "/v1/chat/completions", "body": #"{"prompt":"hi"}"#, "custom": "kept", "assertion": ""])
        #expect(harness.sesame.requestPaths == ["/v1/auth/challenge", "/v1/auth/attest", "/v1/relay/llm/v1/chat/completions"])
        #expect(try await relay.authorizationHeader().hasPrefix("Bearer "))
    }

    @Test("a proof states the call as delivery reads it: a prefix, the method, the relay, the path and query as sent after the base URL, the body's SHA-256")
    func statement() throws {
        let relay = Harness().client().relay("llm")
        func stated(_ method: String, _ tail: String, _ body: String?) throws -> String {
            let url = try #require(URL(string: relay.baseURL.absoluteString + tail))
            let call = try relay.statement(of: HTTPExchange.Request(method: method, url: url, headers: [:], body: body.map { Data($0.utf8) }))
            return String(decoding: call.clientData, as: UTF8.self)
        }
        #expect(try stated("post", "/v1/chat%20x/completions?stream=true&q=a%2Fb", #"{"a":1}"#)
            == "sesame-relay-v1\nPOST\nllm\n/v1/chat%20x/completions\n?stream=true&q=a%2Fb\nAVq9f1zFei3ZS3WQ8ErYCEJzkF7jPsXOvq5iJ2qX-GI")
        // No query and an empty one differ; no body is the hash of no bytes.
        #expect(try stated("GET", "/models", nil) == "sesame-relay-v1\nGET\nllm\n/models\n\n47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU")
        #expect(try stated("GET", "/models?", nil) == "sesame-relay-v1\nGET\nllm\n/models\n?\n47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU")
        #expect(try stated("GET", "", nil).hasPrefix("sesame-relay-v1\nGET\nllm\n\n\n"))
    }

    @Test("a token Sesame no longer takes (expired in the background, rotated) is renewed and the call sent once more")
    func renewed() async throws {
        let harness = Harness()
        let relay = harness.client().relay("llm")
        _ = try await relay.data(for: Self.completion(relay))
        harness.sesame.with { $0.accessTokens.removeAll() }
        let (data, response) = try await relay.data(for: Self.completion(relay, body: "again"))
        #expect(try response.statusCode == 200 && Self.echo(data)["body"] == "again")
        #expect(harness.sesame.count("/v1/relay/llm/v1/chat/completions") == 3)
        #expect(harness.sesame.count("/v1/auth/refresh") == 1)
    }

    @Test("the upstream's own refusals are answers, not errors, and leave the token alone")
    func upstreamRefusals() async throws {
        let harness = Harness()
        let relay = harness.client().relay("llm")
        harness.sesame.with { $0.relayUpstreamStatus = 401 }
        let (_, response) = try await relay.data(for: Self.completion(relay))
        #expect(response.statusCode == 401)
        #expect(response.value(forHTTPHeaderField: "X-Sesame-Upstream") == "1")
        #expect(harness.sesame.count("/v1/relay/llm/v1/chat/completions") == 1)
        #expect(harness.sesame.count("/v1/auth/refresh") == 0)
    }

    @Test("Sesame's refusals are errors: a quota with its wait, a path the relay does not allow; no network; a URL outside the relay is not sent")
    func sesameRefusals() async throws {
        let harness = Harness()
        let relay = harness.client().relay("llm")
        harness.sesame.with { $0.relayRefusal = (429, "relay_quota_exceeded", 30) }
        do {
            _ = try await relay.data(for: Self.completion(relay))
            Issue.record("a quota refusal was returned as an answer")
        } catch {
            guard case .rateLimited(let wait) = error else { throw error }
            #expect(wait >= .seconds(30) && wait < .seconds(31))
        }
        harness.sesame.with { $0.relayRefusal = (403, "relay_path_not_allowed", nil) }
        await #expect(throws: SesameError.server(code: "relay_path_not_allowed", message: "refused")) {
            _ = try await relay.data(for: Self.completion(relay))
        }
        harness.sesame.with {
            $0.relayRefusal = nil
            $0.offline = true
        }
        do {
            _ = try await relay.data(for: Self.completion(relay))
            Issue.record("answered offline")
        } catch {
            guard case .network = error else { throw error }
        }
        harness.sesame.with { $0.offline = false }
        let sentBefore = harness.sesame.with { $0.requests.count }
        await #expect(throws: SesameError.self) {
            _ = try await relay.data(for: URLRequest(url: URL(string: "https://api.openai.com/v1/chat/completions")!))
        }
        await #expect(throws: SesameError.self) {
            _ = try await relay.data(for: URLRequest(url: URL(string: "https://sesame.example.com/v1/relay/llmx/v1")!))
        }
        #expect(harness.sesame.with { $0.requests.count } == sentBefore)
    }

    @Test("a relay asking for assertions gets one by the install's key over each call's body")
    func assertionProof() async throws {
        let harness = Harness()
        let relay = harness.client().relay("llm", proof: .assertion)
        let (first, _) = try await relay.data(for: Self.completion(relay, body: "order-1"))
        let (second, _) = try await relay.data(for: Self.completion(relay, body: "order-2"))
        let assertions = try [first, second].map { try #require(Data(base64Encoded: try Self.echo($0)["assertion"] ?? "")) }
        #expect(assertions.count == 2 && !assertions[0].isEmpty && assertions[0] != assertions[1])
    }

    @Test("bytes(for:) over a transport that cannot stream gives the body whole")
    func bytesWithoutStreaming() async throws {
        let harness = Harness()
        let relay = harness.client().relay("llm")
        let (body, response) = try await relay.bytes(for: Self.completion(relay, body: "streamed"))
        #expect(response.statusCode == 200)
        var data = Data()
        for try await chunk in body { data.append(chunk) }
        #expect(try Self.echo(data)["body"] == "streamed")
    }
}
