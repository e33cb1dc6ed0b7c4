#ifndef SESAME_CRDKAFKA_SHIM_H
#define SESAME_CRDKAFKA_SHIM_H

#include <librdkafka/rdkafka.h>

/// Produces one message with a key, copying key and value; `opaque` comes back in the delivery
/// report as the message's `_private`. `headers` (may be NULL) become the message's: librdkafka
/// takes them over when it accepts the message, and the caller destroys them when it does not.
/// Wrapped here because Swift cannot call the variadic `rd_kafka_producev` and its `RD_KAFKA_V_*`
/// macros (available since librdkafka 0.11; headers since 0.11.4).
static inline rd_kafka_resp_err_t sesame_rd_kafka_produce(
    rd_kafka_t *rk, const char *topic,
    const void *key, size_t key_size,
    const void *value, size_t value_size,
    rd_kafka_headers_t *headers,
    void *opaque) {
    if (headers == NULL) {
        return rd_kafka_producev(
            rk,
            RD_KAFKA_V_TOPIC(topic),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_KEY(key, key_size),
            RD_KAFKA_V_VALUE((void *)value, value_size),
            RD_KAFKA_V_OPAQUE(opaque),
            RD_KAFKA_V_END);
    }
    return rd_kafka_producev(
        rk,
        RD_KAFKA_V_TOPIC(topic),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_KEY(key, key_size),
        RD_KAFKA_V_VALUE((void *)value, value_size),
        RD_KAFKA_V_HEADERS(headers),
        RD_KAFKA_V_OPAQUE(opaque),
        RD_KAFKA_V_END);
}

#endif
