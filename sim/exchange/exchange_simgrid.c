/* The exchange over SimGrid (see exchange_simgrid.h): each operation is the collective, PS or
 * point-to-point call of sim/net/collective.h and sim/net/ps.h that moves its bytes; buffers are
 * ignored except the all-gather's, whose few bytes are copied through a board shared by the actors.
 */
#include "sim/exchange/exchange_simgrid.h"
#include "common/status.h"
#include "sim/net/background.h"
#include "sim/net/compute_charge.h"
#include "sim/net/internal.h"
#include "sim/net/ps.h"

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/cond.h>
#include <simgrid/engine.h>
#include <simgrid/mailbox.h>
#include <simgrid/mutex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the all-gathers of one group carry: two rows of `size` parts of `count` bytes, used by
 * the calls alternately. A member's k-th call writes row k % 2 before the messages and reads it
 * after; no member completes call k + 1 before every member has returned from call k, so row
 * k % 2 is free again when call k + 2 writes it. */
typedef struct gather_board {
    sim_comm *comm;
    size_t count;     /* bytes of one member's part */
    uint8_t *rows[2]; /* (size * count) each */
    long *calls;      /* (size) all-gathers each member has made on this group */
    struct gather_board *next;
} gather_board;

typedef struct sx_exchange {
    exchange ex;
    sim_cluster *cluster;
    sim_coll_opts coll;
    int n_workers;
    sim_ps *ps;
    exchange_ps_hooks ps_hooks;
    sim_background *background;
    gather_board *boards;
    double ps_wire_jitter; /* sim_ps_opts.wire_jitter, with seed */
    uint64_t seed;
    sim_compute_host *hosts; /* (n_workers) each worker's host, as the compute model sees it */
    uint8_t *host_known;     /* (n_workers) 1 once hosts[w] is filled (by worker w's actor) */
    int ran;                 /* run() was called */
    /* SSP's clocks: (n_workers) steps completed; guarded by mutex, waited on with advanced */
    long *clock;
    sg_mutex_t mutex;
    sg_cond_t advanced;
} sx_exchange;

static void result_of(const sim_coll_result *cr, exchange_result *r) {
    if (!r) return;
    r->start_s = cr->start_s;
    r->end_s = cr->end_s;
    r->bytes_sent = cr->bytes_sent;
    r->bytes_recv = cr->bytes_recv;
}

static sim_comm *comm_of(exchange_group *g) {
    return (sim_comm *)g;
}

static double sx_now(void *self) {
    (void)self;
    return simgrid_get_clock();
}

static exchange_group *sx_group(void *self, const int *members, int m) {
    sx_exchange *x = self;
    if (!members) return (exchange_group *)sim_cluster_world(x->cluster);
    return (exchange_group *)sim_cluster_group(x->cluster, members, m);
}

static int sx_allreduce(void *self, exchange_group *g, int member, float *buf, size_t count,
                        double bytes, exchange_result *r) {
    (void)buf;
    (void)count;
    sx_exchange *x = self;
    sim_coll_result cr = {0};
    int rc = sim_allreduce(comm_of(g), member, bytes, &x->coll, &cr);
    result_of(&cr, r);
    return rc;
}

/* A request of this backend: an all-reduce in flight (sim/net/collective.h's request) or one
 * point-to-point message (a SimGrid comm). */
typedef struct sx_request {
    sim_request *coll; /* all-reduce, or NULL */
    sg_comm_t comm;    /* message, until it is observed complete */
    int done;          /* message: 1 once observed complete (the comm is then released) */
    int status;        /* message: SS_OK, or the invalid call's status */
    void *payload;     /* a receive's landing place: the sender's token (no data is simulated) */
    exchange_result res;
} sx_request;

static exchange_request *sx_allreduce_start(void *self, exchange_group *g, int member, float *buf,
                                            size_t count, double bytes) {
    (void)buf;
    (void)count;
    sx_exchange *x = self;
    sx_request *rq = ss_calloc(1, sizeof *rq);
    rq->coll = sim_allreduce_async(comm_of(g), member, bytes, &x->coll, NULL, NULL);
    return (exchange_request *)rq;
}

/* A message completes when SimGrid says so; the time it is observed is its end. test() may
 * change the request's state (it releases the comm), hence the cast. */
static void p2p_observe(sx_request *rq, int block) {
    if (rq->done) return;
    if (block) {
        sg_comm_wait(rq->comm);
    } else if (!sg_comm_test(rq->comm)) {
        return;
    }
    rq->comm = NULL;
    rq->done = 1;
    rq->res.end_s = simgrid_get_clock();
}

static int sx_test(void *self, const exchange_request *rq) {
    (void)self;
    sx_request *r = (sx_request *)rq;
    if (r->coll) return sim_request_test(r->coll);
    p2p_observe(r, 0);
    return r->done;
}

static int sx_wait(void *self, exchange_request *rq, exchange_result *r) {
    (void)self;
    sx_request *q = (sx_request *)rq;
    int rc;
    if (q->coll) {
        sim_coll_result cr = {0};
        rc = sim_request_wait(q->coll, &cr);
        result_of(&cr, r);
    } else {
        p2p_observe(q, 1);
        rc = q->status;
        if (r) *r = q->res;
    }
    free(q);
    return rc;
}

static gather_board *board_of(sx_exchange *x, sim_comm *c, size_t count) {
    gather_board *b = x->boards;
    while (b && b->comm != c)
        b = b->next;
    if (!b) {
        size_t n = (size_t)sim_comm_size(c);
        b = ss_calloc(1, sizeof *b);
        b->comm = c;
        b->count = count;
        b->rows[0] = ss_calloc(n, count ? count : 1);
        b->rows[1] = ss_calloc(n, count ? count : 1);
        b->calls = ss_calloc(n, sizeof(long));
        b->next = x->boards;
        x->boards = b;
    }
    SS_ASSERT(b->count == count); /* every call on a group gathers the same size */
    return b;
}

static int sx_allgather(void *self, exchange_group *g, int member, const void *mine, void *all,
                        size_t count, double bytes, exchange_result *r) {
    sx_exchange *x = self;
    sim_comm *c = comm_of(g);
    uint8_t *row = NULL;
    if (mine && all && count > 0 && member >= 0 && member < sim_comm_size(c)) {
        gather_board *b = board_of(x, c, count);
        row = b->rows[b->calls[member]++ & 1];
        memcpy(row + (size_t)member * count, mine, count);
    }
    sim_coll_result cr = {0};
    int rc = sim_allgather_opts(c, member, bytes, &x->coll, &cr);
    if (rc == SS_OK && row) memcpy(all, row, (size_t)sim_comm_size(c) * count);
    result_of(&cr, r);
    return rc;
}

static int sx_broadcast(void *self, exchange_group *g, int member, int root, float *buf,
                        size_t count, double bytes, exchange_result *r) {
    (void)self;
    (void)buf;
    (void)count;
    sim_coll_result cr = {0};
    int rc = sim_broadcast(comm_of(g), member, root, bytes, &cr);
    result_of(&cr, r);
    return rc;
}

static int sx_send(void *self, exchange_group *g, int member, int dst, const float *buf,
                   size_t count, double bytes, exchange_result *r) {
    (void)self;
    (void)buf;
    (void)count;
    sim_coll_result cr = {0};
    int rc = sim_send(comm_of(g), member, dst, bytes, &cr);
    result_of(&cr, r);
    return rc;
}

static int sx_recv(void *self, exchange_group *g, int member, int src, float *buf, size_t count,
                   double bytes, exchange_result *r) {
    (void)self;
    (void)buf;
    (void)count;
    sim_coll_result cr = {0};
    int rc = sim_recv(comm_of(g), member, src, bytes, &cr);
    result_of(&cr, r);
    return rc;
}

/* ---- non-blocking point to point: one SimGrid put or get per message, on mailboxes of their
 * own per group and ordered pair, so that messages started together are concurrent flows ---- */

static sg_mailbox_t p2p_async_mailbox(const sim_comm *c, int src, int dst) {
    char name[96];
    snprintf(name, sizeof name, "x%p.%d.%d", (const void *)c, src, dst);
    return sg_mailbox_by_name(name);
}

/* SimGrid moves whole bytes: round, never below one (as the collectives do). */
static long p2p_wire_bytes(double bytes) {
    long b = lround(bytes);
    return b < 1 ? 1 : b;
}

static sx_request *p2p_request(sim_comm *c, int member, int peer, double bytes, const char *what) {
    sx_request *rq = ss_calloc(1, sizeof *rq);
    rq->res.start_s = rq->res.end_s = simgrid_get_clock();
    int n = sim_comm_size(c);
    if (member < 0 || member >= n || peer < 0 || peer >= n || peer == member || !(bytes >= 0)) {
        rq->status = ss_error_set(SS_EUSAGE,
                                  "%s: member %d, peer %d, %.17g bytes (group of %d: members "
                                  "0..%d, peer other than the member, bytes >= 0)",
                                  what, member, peer, bytes, n, n - 1);
        rq->done = 1;
    }
    return rq;
}

static exchange_request *sx_send_start(void *self, exchange_group *g, int member, int dst,
                                       const float *buf, size_t count, double bytes) {
    (void)self;
    (void)buf;
    (void)count;
    sx_request *rq = p2p_request(comm_of(g), member, dst, bytes, "send_start");
    if (rq->done) return (exchange_request *)rq;
    long wire = p2p_wire_bytes(bytes);
    rq->comm = sg_mailbox_put_async(p2p_async_mailbox(comm_of(g), member, dst), &sim_token, wire);
    rq->res.bytes_sent = (double)wire;
    return (exchange_request *)rq;
}

static exchange_request *sx_recv_start(void *self, exchange_group *g, int member, int src,
                                       float *buf, size_t count, double bytes) {
    (void)self;
    (void)buf;
    (void)count;
    sx_request *rq = p2p_request(comm_of(g), member, src, bytes, "recv_start");
    if (rq->done) return (exchange_request *)rq;
    rq->comm = sg_mailbox_get_async(p2p_async_mailbox(comm_of(g), src, member), &rq->payload);
    rq->res.bytes_recv = (double)p2p_wire_bytes(bytes);
    return (exchange_request *)rq;
}

/* ---- parameter servers: sim/net/ps.h, its hooks forwarded without the time argument ---- */

static void ps_on_push(void *ctx, int server, int worker, int64_t round, const void *payload,
                       double now_s) {
    (void)now_s;
    const sx_exchange *x = ctx;
    x->ps_hooks.on_push(x->ps_hooks.ctx, server, worker, round, payload);
}

static void ps_on_pull(void *ctx, int server, int worker, int64_t round, double now_s) {
    (void)now_s;
    const sx_exchange *x = ctx;
    x->ps_hooks.on_pull(x->ps_hooks.ctx, server, worker, round);
}

static int sx_ps_start(void *self, const exchange_ps_opts *o) {
    sx_exchange *x = self;
    if (x->ps) return ss_error_set(SS_EUSAGE, "exchange: the parameter servers run already");
    if (sim_cluster_n_ps(x->cluster) < o->n_servers)
        return ss_error_set(SS_EUSAGE,
                            "the run needs %d parameter server host(s); the cluster maps %d",
                            o->n_servers, sim_cluster_n_ps(x->cluster));
    x->ps_hooks = o->hooks;
    sim_ps_opts po = {.n_workers = x->n_workers,
                      .worker_hosts = sim_cluster_worker_hosts(x->cluster),
                      .n_servers = o->n_servers,
                      .server_hosts = sim_cluster_ps_hosts(x->cluster),
                      .mode = o->async ? SIM_PS_ASYNC : SIM_PS_SYNC,
                      .request_bytes = 0,
                      .wire_jitter = x->ps_wire_jitter,
                      .seed = x->seed};
    po.hooks.ctx = x;
    po.hooks.on_push = o->hooks.on_push ? ps_on_push : NULL;
    po.hooks.on_pull = o->hooks.on_pull ? ps_on_pull : NULL;
    return sim_ps_start(&po, &x->ps);
}

static int sx_ps_push(void *self, int worker, const float *buf, size_t count, double bytes,
                      int64_t round, exchange_result *r) {
    (void)count;
    sx_exchange *x = self;
    SS_ASSERT(x->ps != NULL);
    sim_coll_result cr = {0};
    int rc = sim_ps_push(x->ps, worker, bytes, round, buf, &cr);
    result_of(&cr, r);
    return rc;
}

static int sx_ps_pull(void *self, int worker, float *buf, size_t count, double bytes, int64_t round,
                      exchange_result *r) {
    (void)buf;
    (void)count;
    sx_exchange *x = self;
    SS_ASSERT(x->ps != NULL);
    sim_coll_result cr = {0};
    int rc = sim_ps_pull(x->ps, worker, bytes, round, &cr);
    result_of(&cr, r);
    return rc;
}

static int sx_ps_push_pull(void *self, int worker, float *buf, size_t count, double bytes,
                           int64_t round, exchange_result *r) {
    (void)count;
    sx_exchange *x = self;
    SS_ASSERT(x->ps != NULL);
    sim_coll_result cr = {0};
    int rc = sim_ps_push_pull(x->ps, worker, bytes, round, buf, &cr);
    result_of(&cr, r);
    return rc;
}

/* ---- SSP's clocks: shared by the actors, one simulated mutex and condition ---- */

static long min_clock(const sx_exchange *x) {
    long m = x->clock[0];
    for (int i = 1; i < x->n_workers; i++)
        if (x->clock[i] < m) m = x->clock[i];
    return m;
}

static long sx_clock_wait(void *self, int worker, long staleness) {
    sx_exchange *x = self;
    sg_mutex_lock(x->mutex);
    if (staleness >= 0)
        while (x->clock[worker] - min_clock(x) > staleness)
            sg_cond_wait(x->advanced, x->mutex);
    long gap = x->clock[worker] - min_clock(x);
    sg_mutex_unlock(x->mutex);
    return gap;
}

static void sx_clock_advance(void *self, int worker, long clock, long *rounds) {
    sx_exchange *x = self;
    sg_mutex_lock(x->mutex);
    x->clock[worker] = clock;
    if (clock != EXCHANGE_CLOCK_DONE && rounds && min_clock(x) == clock) (*rounds)++;
    sg_cond_notify_all(x->advanced);
    sg_mutex_unlock(x->mutex);
}

/* ---- the workers and their compute ---- */

typedef struct worker_start {
    void (*fn)(void *ctx, int w);
    void *ctx;
    int w;
} worker_start;

static void worker_actor(void *arg) {
    const worker_start *ws = arg;
    ws->fn(ws->ctx, ws->w);
}

static int sx_run(void *self, int workers, void (*worker)(void *ctx, int w), void *ctx,
                  exchange_run_result *out) {
    sx_exchange *x = self;
    memset(out, 0, sizeof *out);
    if (x->ran) return ss_error_set(SS_EUSAGE, "exchange: the workers of a run run once");
    if (workers != x->n_workers)
        return ss_error_set(SS_EUSAGE, "policy: the cluster maps %d workers, the policy wants %d",
                            x->n_workers, workers);
    x->ran = 1;
    worker_start *args = ss_calloc((size_t)workers, sizeof *args);
    for (int w = 0; w < workers; w++) {
        args[w] = (worker_start){.fn = worker, .ctx = ctx, .w = w};
        sim_actor_spawn("worker", w, sim_cluster_worker_host(x->cluster, w), worker_actor,
                        &args[w]);
    }
    int rc = sim_cluster_run(x->cluster, &out->end_s);
    free(args);
    out->first_worker = 0;
    out->n_here = workers;
    return rc;
}

/* Worker w's host (called by its own actor, which runs there). */
static const sim_compute_host *host_of(sx_exchange *x, int w) {
    SS_ASSERT(w >= 0 && w < x->n_workers);
    if (!x->host_known[w]) {
        sim_compute_host_of_self(&x->hosts[w]);
        x->host_known[w] = 1;
    }
    return &x->hosts[w];
}

static int sx_compute(void *self, int worker, const sim_compute_cfg *cfg, const sim_step_cost *cost,
                      double start_s) {
    (void)start_s; /* the step source took no simulated time */
    double flops = 0, seconds = 0;
    int rc = sim_compute_charge(cfg, cost, host_of(self, worker), &flops, &seconds);
    if (rc != SS_OK) return rc;
    if (flops > 0) sg_actor_execute(flops);
    if (seconds > 0) sg_actor_sleep_for(seconds);
    return SS_OK;
}

static int sx_layer_times(void *self, int worker, const sim_compute_cfg *cfg,
                          const sim_layer_cost *layers, int n, double *fwd_s, double *bwd_s,
                          double *optimizer_s) {
    return sim_compute_layers(cfg, host_of(self, worker), layers, n, fwd_s, bwd_s, optimizer_s);
}

static const exchange_ops sx_ops = {.name = "simgrid",
                                    .now = sx_now,
                                    .run = sx_run,
                                    .compute = sx_compute,
                                    .layer_times = sx_layer_times,
                                    .group = sx_group,
                                    .allreduce = sx_allreduce,
                                    .allreduce_start = sx_allreduce_start,
                                    .test = sx_test,
                                    .wait = sx_wait,
                                    .allgather = sx_allgather,
                                    .broadcast = sx_broadcast,
                                    .send = sx_send,
                                    .recv = sx_recv,
                                    .send_start = sx_send_start,
                                    .recv_start = sx_recv_start,
                                    .ps_start = sx_ps_start,
                                    .ps_push = sx_ps_push,
                                    .ps_pull = sx_ps_pull,
                                    .ps_push_pull = sx_ps_push_pull,
                                    .clock_wait = sx_clock_wait,
                                    .clock_advance = sx_clock_advance};

/* Cross traffic among every host of the run: the workers and the servers. */
static int start_background(sx_exchange *x, double load, uint64_t seed) {
    const int n = x->n_workers, nps = sim_cluster_n_ps(x->cluster);
    sg_host_t *hosts = ss_malloc(sizeof(sg_host_t) * (size_t)(n + nps));
    for (int w = 0; w < n; w++)
        hosts[w] = sim_cluster_worker_host(x->cluster, w);
    for (int k = 0; k < nps; k++)
        hosts[n + k] = sim_cluster_ps_host(x->cluster, k);
    int rc = sim_background_start(hosts, n + nps, load, seed, &x->background);
    free(hosts);
    return rc;
}

int exchange_simgrid_open(sim_cluster *cluster, const exchange_simgrid_opts *o, exchange **out) {
    *out = NULL;
    sx_exchange *x = ss_calloc(1, sizeof *x);
    x->ex.ops = &sx_ops;
    x->ex.self = x;
    x->cluster = cluster;
    x->coll = o->coll;
    x->n_workers = sim_cluster_n_workers(cluster);
    x->ps_wire_jitter = o->ps_wire_jitter;
    x->seed = o->seed;
    x->clock = ss_calloc((size_t)x->n_workers, sizeof(long));
    x->hosts = ss_calloc((size_t)x->n_workers, sizeof *x->hosts);
    x->host_known = ss_calloc((size_t)x->n_workers, 1);
    int rc = sim_coll_check(sim_cluster_world(cluster), &o->coll, "--collective");
    if (rc != SS_OK) {
        free(x->host_known);
        free(x->hosts);
        free(x->clock);
        free(x);
        return rc;
    }
    x->mutex = sg_mutex_init();
    x->advanced = sg_cond_init();
    if (o->background_load > 0) {
        rc = start_background(x, o->background_load, o->seed);
        if (rc != SS_OK) {
            exchange_simgrid_close(&x->ex);
            return rc;
        }
    }
    *out = &x->ex;
    return SS_OK;
}

void exchange_simgrid_close(exchange *ex) {
    if (!ex) return;
    sx_exchange *x = ex->self;
    if (x->ps) sim_ps_free(x->ps);
    sim_background_free(x->background);
    while (x->boards) {
        gather_board *b = x->boards;
        x->boards = b->next;
        free(b->rows[0]);
        free(b->rows[1]);
        free(b->calls);
        free(b);
    }
    sg_cond_destroy(x->advanced);
    sg_mutex_destroy(x->mutex);
    free(x->host_known);
    free(x->hosts);
    free(x->clock);
    free(x);
}
