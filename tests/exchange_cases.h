/* The exchange's conformance table (sim/exchange/exchange.h): one row per behaviour every backend
 * must show, each a worker function written against the exchange's operations alone and run by
 * run_workers. tests/test_sim_exchange.c runs every row on the SimGrid backend (4 workers and
 * 2 servers, one simulation per row), tests/test_exchange_mpi.c on the MPI backend under mpirun
 * (4 worker ranks and 1 or 2 server ranks). A new exchange operation gets its row here.
 *
 * A worker notes what went wrong in its case_state; the harness asserts that nothing did. */
#ifndef SS_TESTS_EXCHANGE_CASES_H
#define SS_TESTS_EXCHANGE_CASES_H

#include "common/status.h"
#include "sim/exchange/exchange.h"

#include <stdio.h>
#include <string.h>

#define CASE_WORKERS 4

typedef struct case_state {
    exchange *ex;
    int n_servers;
    int failures;
    char first[256];    /* the first failure: worker, line, what */
    long pushes, pulls; /* the PS hooks' calls, on this process (the servers' side) */
} case_state;

#define CASE_CHECK(c, w, cond)                                                                     \
    do {                                                                                           \
        if (!(cond) && (c)->failures++ == 0)                                                       \
            snprintf((c)->first, sizeof(c)->first, "worker %d, line %d: %s", (w), __LINE__,        \
                     #cond);                                                                       \
    } while (0)

/* Bytes on the wire: a ring all-reduce of M bytes among m members sends 2 (m - 1) M / m, in
 * whole bytes per chunk, blocking or not; a member's part of an all-gather is what it says. */
static void case_bytes_on_the_wire(case_state *c, int w) {
    const exchange *ex = c->ex;
    exchange_group *world = ex->ops->group(ex->self, NULL, CASE_WORKERS);
    float buf[64] = {0};
    exchange_result r = {0};
    CASE_CHECK(c, w, ex->ops->allreduce(ex->self, world, w, buf, 64, 1e6, &r) == SS_OK);
    CASE_CHECK(c, w, r.bytes_sent == 2.0 * (CASE_WORKERS - 1) * 250000);
    CASE_CHECK(c, w, r.end_s >= r.start_s);
    exchange_request *rq = ex->ops->allreduce_start(ex->self, world, w, buf, 64, 1e6);
    CASE_CHECK(c, w, rq != NULL && ex->ops->wait(ex->self, rq, &r) == SS_OK);
    CASE_CHECK(c, w, r.bytes_sent == 2.0 * (CASE_WORKERS - 1) * 250000);
}

/* All-gather: every member receives every member's bytes, at its index, call after call. */
static void case_allgather_delivers(case_state *c, int w) {
    const exchange *ex = c->ex;
    exchange_group *world = ex->ops->group(ex->self, NULL, CASE_WORKERS);
    for (int call = 0; call < 3; call++) {
        uint8_t mine[2] = {(uint8_t)(10 * w + call), (uint8_t)(100 + w)}, all[2 * CASE_WORKERS];
        memset(all, 0xff, sizeof all);
        CASE_CHECK(c, w, ex->ops->allgather(ex->self, world, w, mine, all, 2, 2, NULL) == SS_OK);
        for (int k = 0; k < CASE_WORKERS; k++) {
            CASE_CHECK(c, w, all[2 * k] == 10 * k + call);
            CASE_CHECK(c, w, all[2 * k + 1] == 100 + k);
        }
    }
}

/* Groups: the same list gives the same group; disjoint pairs exchange at once. */
static void case_group_identity(case_state *c, int w) {
    const exchange *ex = c->ex;
    int pair[2] = {w & 1, (w & 1) + 2}; /* {0, 2} and {1, 3} */
    exchange_group *g = ex->ops->group(ex->self, pair, 2);
    CASE_CHECK(c, w, g != NULL && g == ex->ops->group(ex->self, pair, 2));
    float buf[8] = {0};
    exchange_result r = {0};
    CASE_CHECK(c, w, ex->ops->allreduce(ex->self, g, w >> 1, buf, 8, 32, &r) == SS_OK);
    CASE_CHECK(c, w, r.bytes_sent == 32);
}

/* Non-blocking all-reduces of a member complete in the order started; test never blocks and is
 * 1 once wait returned... before it, it may be either. */
static void case_nonblocking_order(case_state *c, int w) {
    const exchange *ex = c->ex;
    exchange_group *world = ex->ops->group(ex->self, NULL, CASE_WORKERS);
    float buf[3][16] = {{0}};
    exchange_request *rq[3];
    for (int i = 0; i < 3; i++)
        rq[i] = ex->ops->allreduce_start(ex->self, world, w, buf[i], 16, 4e5 * (3 - i));
    double last_end = -1;
    for (int i = 0; i < 3; i++) {
        exchange_result r = {0};
        CASE_CHECK(c, w, ex->ops->wait(ex->self, rq[i], &r) == SS_OK);
        CASE_CHECK(c, w, r.end_s >= last_end);
        last_end = r.end_s;
    }
}

/* Invalid arguments are usage errors and leave the exchange usable. */
static void case_bad_arguments(case_state *c, int w) {
    const exchange *ex = c->ex;
    exchange_group *world = ex->ops->group(ex->self, NULL, CASE_WORKERS);
    float buf[4] = {0};
    CASE_CHECK(c, w,
               ex->ops->allreduce(ex->self, world, CASE_WORKERS, buf, 4, 16, NULL) == SS_EUSAGE);
    exchange_request *rq = ex->ops->send_start(ex->self, world, w, w, buf, 4, 16);
    CASE_CHECK(c, w, rq != NULL && ex->ops->wait(ex->self, rq, NULL) == SS_EUSAGE);
    CASE_CHECK(c, w, ex->ops->allreduce(ex->self, world, w, buf, 4, 16, NULL) == SS_OK);
}

/* Point to point: a fan-out started at once reaches every peer, matched per pair in order. */
static void case_fan_out(case_state *c, int w) {
    const exchange *ex = c->ex;
    exchange_group *world = ex->ops->group(ex->self, NULL, CASE_WORKERS);
    float out[CASE_WORKERS][4], in[CASE_WORKERS][4];
    exchange_request *rq[2 * CASE_WORKERS];
    int n = 0;
    for (int p = 0; p < CASE_WORKERS; p++) {
        if (p == w) continue;
        for (int i = 0; i < 4; i++)
            out[p][i] = (float)(10 * w + p);
        rq[n++] = ex->ops->send_start(ex->self, world, w, p, out[p], 4, 16);
        rq[n++] = ex->ops->recv_start(ex->self, world, w, p, in[p], 4, 16);
    }
    for (int i = 0; i < n; i++) {
        exchange_result r = {0};
        CASE_CHECK(c, w, ex->ops->wait(ex->self, rq[i], &r) == SS_OK);
        CASE_CHECK(c, w, r.bytes_sent + r.bytes_recv == 16);
    }
}

/* Parameter servers (asynchronous, as SSP's): every push reaches every server's hook before
 * ps_push returns, every pull is answered; each call's bytes as asked. */
static void case_ps_hooks(case_state *c, int w) {
    const exchange *ex = c->ex;
    float buf[11] = {0};
    for (long round = 1; round <= 2; round++) {
        exchange_result r = {0};
        CASE_CHECK(c, w, ex->ops->ps_push(ex->self, w, buf, 11, 44, round, &r) == SS_OK);
        CASE_CHECK(c, w, r.bytes_sent == 44);
        CASE_CHECK(c, w, ex->ops->ps_pull(ex->self, w, buf, 11, 44, round, &r) == SS_OK);
        CASE_CHECK(c, w, r.bytes_recv == 44);
    }
}

/* SSP's clocks: no worker runs more than 1 step ahead of the slowest. */
static void case_staleness_bound(case_state *c, int w) {
    const exchange *ex = c->ex;
    for (long step = 1; step <= 4; step++) {
        CASE_CHECK(c, w, ex->ops->clock_wait(ex->self, w, 1) <= 1);
        ex->ops->clock_advance(ex->self, w, step, NULL);
    }
    ex->ops->clock_advance(ex->self, w, EXCHANGE_CLOCK_DONE, NULL);
}

static void case_on_push(void *ctx, int server, int worker, int64_t round, const void *payload) {
    (void)server, (void)worker, (void)round, (void)payload;
    ((case_state *)ctx)->pushes++;
}

static void case_on_pull(void *ctx, int server, int worker, int64_t round) {
    (void)server, (void)worker, (void)round;
    ((case_state *)ctx)->pulls++;
}

typedef struct exchange_case {
    const char *name;
    void (*worker)(case_state *c, int w);
    int ps; /* 1: asynchronous parameter servers with the counting hooks */
} exchange_case;

static const exchange_case exchange_cases[] = {
    {"bytes on the wire: ring volume, blocking and not", case_bytes_on_the_wire, 0},
    {"all-gather: every member's bytes at its index", case_allgather_delivers, 0},
    {"groups: same list, same group; pairs at once", case_group_identity, 0},
    {"non-blocking all-reduces: complete in the order started", case_nonblocking_order, 0},
    {"bad arguments: usage errors, exchange still usable", case_bad_arguments, 0},
    {"point to point: a fan-out started at once", case_fan_out, 0},
    {"parameter servers: hooks see every push, pulls answered", case_ps_hooks, 1},
    {"clocks: the staleness bound holds", case_staleness_bound, 1},
};
#define EXCHANGE_CASE_COUNT ((int)(sizeof exchange_cases / sizeof exchange_cases[0]))

/* The PS options of a row (hooks counting into c). */
static inline exchange_ps_opts case_ps_opts(case_state *c) {
    exchange_ps_opts o = {.n_servers = c->n_servers, .async = 1};
    o.hooks.ctx = c;
    o.hooks.on_push = case_on_push;
    o.hooks.on_pull = case_on_pull;
    return o;
}

/* run_workers' worker: the row's function. */
typedef struct case_run {
    case_state *c;
    const exchange_case *row;
} case_run;

static inline void case_worker(void *ctx, int w) {
    const case_run *run = ctx;
    run->row->worker(run->c, w);
}

#endif
