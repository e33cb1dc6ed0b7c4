import CRdKafka
import Logging
import Synchronization

/// The one owner of a librdkafka handle and of every C pointer that comes with it.
///
/// `@unchecked Sendable`: librdkafka handles are thread-safe for the calls made here (produce,
/// poll, metadata, flush, assign; see librdkafka's INTRODUCTION.md, "Threads and callbacks");
/// the handle is written once in `init` and released once in `close()`. `produce` may race with
/// `close()` and is serialised against it; every other call happens on the polling thread before
/// it closes the client.
final class RdKafkaClient: @unchecked Sendable {
    /// Producer or consumer.
    enum Kind {
        case producer
        case consumer
    }

    private let handle: OpaquePointer
    private let kind: Kind
    /// Keeps the delivery-report sink alive for as long as librdkafka may call back into it.
    private let deliverySink: Unmanaged<DeliveryReportRegistry>?
    /// A consumer's client-level errors (lost connections, vanished partitions), which librdkafka
    /// reports to a callback rather than as messages; kept alive like `deliverySink`.
    private let errorSink: Unmanaged<ClientErrorQueue>?
    private let isClosed = Mutex(false)

    /// Creates a client from librdkafka properties.
    ///
    /// Producers pass a `deliveryReports` registry: every delivery report is routed to it with
    /// the opaque id given to `produce`.
    init(kind: Kind, properties: [String: String], deliveryReports: DeliveryReportRegistry? = nil) throws(KafkaError) {
        guard let configuration = rd_kafka_conf_new() else {
            throw KafkaError(.clientCreation, "librdkafka could not allocate a configuration")
        }
        var errorText = [CChar](repeating: 0, count: 512)
        for (name, value) in properties.sorted(by: { $0.key < $1.key }) {
            if rd_kafka_conf_set(configuration, name, value, &errorText, errorText.count) != RD_KAFKA_CONF_OK {
                rd_kafka_conf_destroy(configuration)
                throw KafkaError(.configuration, "\(name): \(text(of: errorText))")
            }
        }
        rd_kafka_conf_set_log_cb(configuration) { _, level, facility, text in
            RdKafkaLog.forward(level: level, facility: facility, text: text)
        }
        if let deliveryReports {
            let sink = Unmanaged.passRetained(deliveryReports)
            rd_kafka_conf_set_opaque(configuration, sink.toOpaque())
            rd_kafka_conf_set_dr_msg_cb(configuration) { _, message, opaque in
                guard let message, let opaque else { return }
                let registry = Unmanaged<DeliveryReportRegistry>.fromOpaque(opaque).takeUnretainedValue()
                let id = UInt(bitPattern: message.pointee._private)
                if message.pointee.err == RD_KAFKA_RESP_ERR_NO_ERROR {
                    registry.complete(id, with: .success(
                        KafkaDeliveryReceipt(partition: message.pointee.partition, offset: message.pointee.offset)))
                } else {
                    registry.complete(id, with: .failure(
                        KafkaError(.deliveryFailed, String(cString: rd_kafka_err2str(message.pointee.err)))))
                }
            }
            self.deliverySink = sink
        } else {
            self.deliverySink = nil
        }
        if kind == .consumer {
            let sink = Unmanaged.passRetained(ClientErrorQueue())
            rd_kafka_conf_set_opaque(configuration, sink.toOpaque())
            rd_kafka_conf_set_error_cb(configuration) { _, error, reason, opaque in
                let code = rd_kafka_resp_err_t(rawValue: error)
                let text = reason.map { String(cString: $0) } ?? String(cString: rd_kafka_err2str(code))
                // As librdkafka logs an error nobody handles.
                RdKafkaLog.forward(level: 3, facilityName: "ERROR", message: text)
                guard let opaque else { return }
                Unmanaged<ClientErrorQueue>.fromOpaque(opaque).takeUnretainedValue().append(ClientError(code: code, reason: text))
            }
            self.errorSink = sink
        } else {
            self.errorSink = nil
        }

        let type = kind == .producer ? RD_KAFKA_PRODUCER : RD_KAFKA_CONSUMER
        // On success rd_kafka_new takes ownership of the configuration; on failure it stays ours.
        guard let created = rd_kafka_new(type, configuration, &errorText, errorText.count) else {
            rd_kafka_conf_destroy(configuration)
            deliverySink?.release()
            errorSink?.release()
            throw KafkaError(.clientCreation, text(of: errorText))
        }
        self.handle = created
        self.kind = kind
        if kind == .consumer {
            // Route librdkafka's own events (errors, logs) to the consumer queue we poll.
            rd_kafka_poll_set_consumer(created)
        }
    }

    deinit {
        close()
    }

    // MARK: Producing

    /// Hands one message to librdkafka (copied, headers too); the delivery report later carries `opaqueID`.
    func produce(topic: String, key: [UInt8], value: [UInt8], headers: [String: String] = [:], opaqueID: UInt) -> KafkaError? {
        let result: rd_kafka_resp_err_t? = isClosed.withLock { closed in
            guard !closed else { return nil }
            let list = Self.makeHeaders(headers)
            let result = key.withUnsafeBytes { keyBytes in
                value.withUnsafeBytes { valueBytes in
                    sesame_rd_kafka_produce(
                        handle, topic, keyBytes.baseAddress, keyBytes.count, valueBytes.baseAddress, valueBytes.count, list,
                        UnsafeMutableRawPointer(bitPattern: opaqueID))
                }
            }
            // Accepted, the message owns its headers; refused, they are still ours.
            if result != RD_KAFKA_RESP_ERR_NO_ERROR, let list { rd_kafka_headers_destroy(list) }
            return result
        }
        guard let result else { return KafkaError(.shutDown, "the producer is closed") }
        switch result {
        case RD_KAFKA_RESP_ERR_NO_ERROR: return nil
        case RD_KAFKA_RESP_ERR__QUEUE_FULL: return KafkaError(.queueFull, "the producer's local queue is full")
        default: return KafkaError(.deliveryFailed, String(cString: rd_kafka_err2str(result)))
        }
    }

    /// A librdkafka header list of `headers` (copied), or nil for none.
    private static func makeHeaders(_ headers: [String: String]) -> OpaquePointer? {
        guard !headers.isEmpty, let list = rd_kafka_headers_new(headers.count) else { return nil }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            let bytes = Array(value.utf8)
            bytes.withUnsafeBytes { _ = rd_kafka_header_add(list, name, -1, $0.baseAddress, $0.count) }
        }
        return list
    }

    /// The headers of `message` whose names are in `wanted` and whose values are UTF-8.
    private static func headers(of message: UnsafeMutablePointer<rd_kafka_message_t>, wanted: Set<String>) -> [String: String] {
        var list: OpaquePointer?
        guard rd_kafka_message_headers(message, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return [:] }
        var found: [String: String] = [:]
        var index = 0
        var name: UnsafePointer<CChar>?
        var value: UnsafeRawPointer?
        var size = 0
        // At most a few headers are read: a producer cannot make a consumer walk a long list.
        while index < 16, rd_kafka_header_get_all(list, index, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
            index += 1
            guard let name, let value, size <= 1024 else { continue }
            let key = String(cString: name)
            guard wanted.contains(key), let text = String(validating: UnsafeRawBufferPointer(start: value, count: size), as: UTF8.self)
            else { continue }
            found[key] = text
        }
        return found
    }

    /// Serves delivery reports and other callbacks for up to `milliseconds`. Blocking: call it only
    /// from a dedicated thread.
    func poll(milliseconds: Int) {
        rd_kafka_poll(handle, Int32(milliseconds))
    }

    /// Waits up to `milliseconds` for every queued message to be acknowledged or failed. Blocking.
    /// Returns the number of messages still outstanding.
    func flush(milliseconds: Int) -> Int {
        rd_kafka_flush(handle, Int32(milliseconds))
        return Int(rd_kafka_outq_len(handle))
    }

    // MARK: Consuming

    /// The outcome of one consumer poll.
    enum PollResult {
        case message(KafkaMessage)
        /// A partition is no longer on the broker (deleted, or a broker that lost its log); the
        /// text names it as librdkafka does, "topic [partition]: …".
        case partitionGone(String)
        /// The connection to the brokers failed: they may come back with other logs.
        case brokersUnreachable(String)
        case error(String)
        case nothing
    }

    /// Waits up to `milliseconds` for the next message or client error. Blocking.
    func consumerPoll(milliseconds: Int) -> PollResult {
        if let error = errorSink?.takeUnretainedValue().takeFirst() { return Self.classify(error) }
        guard let pointer = rd_kafka_consumer_poll(handle, Int32(milliseconds)) else {
            // The poll may have served only the error callback.
            return errorSink?.takeUnretainedValue().takeFirst().map(Self.classify) ?? .nothing
        }
        defer { rd_kafka_message_destroy(pointer) }
        let message = pointer.pointee
        let topic = message.rkt.map { String(cString: rd_kafka_topic_name($0)) } ?? ""
        guard message.err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            return Self.classify(ClientError(code: message.err, reason: "\(topic) [\(message.partition)]: \(String(cString: rd_kafka_err2str(message.err)))"))
        }
        let key = message.key.map { Array(UnsafeRawBufferPointer(start: $0, count: message.key_len)) }
        let value = message.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: message.len)) } ?? []
        return .message(
            KafkaMessage(
                topic: topic, partition: message.partition, offset: message.offset, key: key, value: value,
                headers: Self.headers(of: pointer, wanted: KafkaMessage.readHeaders)))
    }

    private static func classify(_ error: ClientError) -> PollResult {
        switch error.code {
        case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION, RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
            .partitionGone(error.reason)
        case RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
            .brokersUnreachable(error.reason)
        default:
            .error(error.reason)
        }
    }

    /// Assigns exactly these partitions at these start offsets, without joining a group.
    func assign(_ assignments: [(topic: String, partition: Int32, offset: Int64)]) throws(KafkaError) {
        guard let list = rd_kafka_topic_partition_list_new(Int32(assignments.count)) else {
            throw KafkaError(.request, "could not allocate a partition list")
        }
        defer { rd_kafka_topic_partition_list_destroy(list) }
        for assignment in assignments {
            rd_kafka_topic_partition_list_add(list, assignment.topic, assignment.partition).pointee.offset = assignment.offset
        }
        let result = rd_kafka_assign(handle, list)
        guard result == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError(.request, "assign: \(String(cString: rd_kafka_err2str(result)))")
        }
    }

    /// The partition's high watermark (the offset the next message will get), asked of the broker.
    func queryHighWatermark(topic: String, partition: Int32, timeoutMilliseconds: Int) throws(KafkaError) -> Int64 {
        var low: Int64 = 0
        var high: Int64 = 0
        let result = rd_kafka_query_watermark_offsets(handle, topic, partition, &low, &high, Int32(timeoutMilliseconds))
        guard result == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError(.request, "watermarks of \(topic)/\(partition): \(String(cString: rd_kafka_err2str(result)))")
        }
        return high
    }

    /// The high watermark last seen for a partition (from fetch responses; no request is made).
    func cachedHighWatermark(topic: String, partition: Int32) -> Int64? {
        var low: Int64 = 0
        var high: Int64 = 0
        let result = rd_kafka_get_watermark_offsets(handle, topic, partition, &low, &high)
        return result == RD_KAFKA_RESP_ERR_NO_ERROR && high >= 0 ? high : nil
    }

    // MARK: Metadata and administration

    /// The number of partitions of `topic`, or nil if the broker does not know it. Blocking.
    func partitionCount(topic: String, timeoutMilliseconds: Int) throws(KafkaError) -> Int? {
        guard let topicHandle = rd_kafka_topic_new(handle, topic, nil) else {
            throw KafkaError(.request, "could not create a topic handle")
        }
        defer { rd_kafka_topic_destroy(topicHandle) }
        var metadata: UnsafePointer<rd_kafka_metadata_t>?
        let result = rd_kafka_metadata(handle, 0, topicHandle, &metadata, Int32(timeoutMilliseconds))
        guard result == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
            throw KafkaError(.request, "metadata: \(String(cString: rd_kafka_err2str(result)))")
        }
        defer { rd_kafka_metadata_destroy(metadata) }
        let topics = UnsafeBufferPointer(start: metadata.pointee.topics, count: Int(metadata.pointee.topic_cnt))
        guard let entry = topics.first(where: { String(cString: $0.topic) == topic }),
              entry.err == RD_KAFKA_RESP_ERR_NO_ERROR, entry.partition_cnt > 0
        else { return nil }
        return Int(entry.partition_cnt)
    }

    /// Creates `topics` that do not exist yet; a topic that already exists is not an error. Blocking.
    func createTopics(_ topics: [(name: String, partitions: Int)], timeoutMilliseconds: Int) throws(KafkaError) {
        var errorText = [CChar](repeating: 0, count: 512)
        var newTopics: [OpaquePointer?] = []
        defer { newTopics.forEach { rd_kafka_NewTopic_destroy($0) } }
        for topic in topics {
            guard let newTopic = rd_kafka_NewTopic_new(topic.name, Int32(topic.partitions), -1, &errorText, errorText.count) else {
                throw KafkaError(.request, "topic \(topic.name): \(text(of: errorText))")
            }
            newTopics.append(newTopic)
        }
        guard let queue = rd_kafka_queue_new(handle) else { throw KafkaError(.request, "could not create a queue") }
        defer { rd_kafka_queue_destroy(queue) }
        let options = rd_kafka_AdminOptions_new(handle, RD_KAFKA_ADMIN_OP_CREATETOPICS)
        defer { rd_kafka_AdminOptions_destroy(options) }
        rd_kafka_AdminOptions_set_request_timeout(options, Int32(timeoutMilliseconds), &errorText, errorText.count)
        newTopics.withUnsafeMutableBufferPointer { buffer in
            rd_kafka_CreateTopics(handle, buffer.baseAddress, buffer.count, options, queue)
        }
        guard let event = rd_kafka_queue_poll(queue, Int32(timeoutMilliseconds + 1000)) else {
            throw KafkaError(.request, "no answer to CreateTopics in time")
        }
        defer { rd_kafka_event_destroy(event) }
        if rd_kafka_event_error(event) != RD_KAFKA_RESP_ERR_NO_ERROR {
            throw KafkaError(.request, "CreateTopics: \(String(cString: rd_kafka_event_error_string(event)))")
        }
        guard let result = rd_kafka_event_CreateTopics_result(event) else {
            throw KafkaError(.request, "CreateTopics returned no result")
        }
        var count = 0
        guard let results = rd_kafka_CreateTopics_result_topics(result, &count) else { return }
        for index in 0..<count {
            let topicResult = results[index]
            let code = rd_kafka_topic_result_error(topicResult)
            if code != RD_KAFKA_RESP_ERR_NO_ERROR && code != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS {
                let name = String(cString: rd_kafka_topic_result_name(topicResult))
                let reason = rd_kafka_topic_result_error_string(topicResult).map { String(cString: $0) } ?? "unknown"
                throw KafkaError(.request, "topic \(name): \(reason)")
            }
        }
    }

    // MARK: Lifetime

    /// Closes the consumer (leaving nothing behind on the broker) and destroys the handle. Blocking;
    /// call once, after every other use.
    func close() {
        let wasClosed = isClosed.withLock { closed in
            defer { closed = true }
            return closed
        }
        guard !wasClosed else { return }
        if kind == .consumer { rd_kafka_consumer_close(handle) }
        rd_kafka_destroy(handle)
        deliverySink?.release()
        errorSink?.release()
    }
}

/// An error librdkafka reported about the client rather than about a message.
struct ClientError: Sendable {
    var code: rd_kafka_resp_err_t
    var reason: String
}

/// The consumer's client errors, appended by librdkafka's error callback (which runs inside the
/// consumer's own poll) and taken by that poll.
final class ClientErrorQueue: Sendable {
    private let pending = Mutex<[ClientError]>([])

    func append(_ error: ClientError) {
        pending.withLock { $0.append(error) }
    }

    func takeFirst() -> ClientError? {
        pending.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    }
}

/// The text librdkafka wrote into an error buffer, up to its terminating zero.
private func text(of buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Forwards librdkafka's log lines to swift-log, at most once per 10 s for a repeated line: while a
/// broker is down librdkafka reports every reconnection attempt.
enum RdKafkaLog {
    private static let logger = Logger(label: "sesame.kafka.librdkafka")
    private static let repeatWindow: Duration = .seconds(10)
    private static let lastLogged = Mutex<[String: ContinuousClock.Instant]>([:])

    /// Called on librdkafka's internal threads; must not call back into librdkafka.
    static func forward(level: Int32, facility: UnsafePointer<CChar>?, text: UnsafePointer<CChar>?) {
        forward(level: level, facilityName: facility.map { String(cString: $0) } ?? "", message: text.map { String(cString: $0) } ?? "")
    }

    static func forward(level: Int32, facilityName: String, message: String) {
        // syslog levels: 0–3 are errors, but a broker going away is routine for us (we retry), so
        // they are warnings; 4–5 notices; the rest debug.
        let swiftLevel: Logger.Level = switch level {
        case ...3: .warning
        case 4...5: .notice
        default: .debug
        }
        guard logger.logLevel <= swiftLevel, isFirstInWindow(facilityName + message) else { return }
        logger.log(level: swiftLevel, "\(message)", metadata: ["librdkafka.facility": "\(facilityName)"])
    }

    private static func isFirstInWindow(_ line: String) -> Bool {
        let now = ContinuousClock.now
        return lastLogged.withLock { lastLogged in
            if let last = lastLogged[line], now - last < repeatWindow { return false }
            if lastLogged.count > 1000 { lastLogged.removeAll() }
            lastLogged[line] = now
            return true
        }
    }
}
