/* The messages of one step of SelSync's data injection, for one worker: every chosen sender
 * sends `bytes` to every other worker, and every worker receives from every chosen sender other
 * than itself. All of a worker's messages start at once (non-blocking point to point of
 * sim/exchange/exchange.h), so the step costs what concurrent flows cost on the platform: on a star
 * of full-duplex links of B bytes/s and route latency L, with every worker starting together, one
 * step takes L + (N - 1) bytes / B (each sender's uplink is shared by its N - 1 messages).
 *
 *     inject_times t;
 *     policy_inject_exchange(ex, world, w, n, chosen, bytes, count, &t);
 *     comm_s += t.send_s; wait_s += t.recv_wait_s; bytes_sent += t.bytes_sent;
 */
#ifndef SS_SIM_POLICY_INJECT_H
#define SS_SIM_POLICY_INJECT_H

#include "sim/exchange/exchange.h"

#include <stddef.h>
#include <stdint.h>

typedef struct inject_times {
    double send_s;      /* from the start until the worker's own sends arrived (0: no sends) */
    double recv_wait_s; /* from then until every message to the worker arrived */
    double bytes_sent;  /* on the wire, by this worker */
} inject_times;

/* Worker w of the n workers of `world` (member = rank); chosen[s] != 0 for the senders; count:
 * floats per message (buffers are not used: NULL). Returns SS_OK or the exchange's error. */
int policy_inject_exchange(const exchange *ex, exchange_group *world, int w, int n,
                           const uint8_t *chosen, double bytes, size_t count, inject_times *t);

#endif
