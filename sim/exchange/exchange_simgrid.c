/* The exchange over SimGrid (see exchange_simgrid.h): each operation is the collective, PS or
 * point-to-point call of sim/net/coll/collective.h and sim/net/ps.h that moves its bytes; buffers
 * are ignored except the all-gather's, whose few bytes are copied through a board shared by the
 * actors.
 */
#include "sim/exchange/exchange_simgrid.h"
#include "common/status.h"
#include "sim/net/background.h"
#include "sim/net/actors.h"
#include "sim/net/compute_charge.h"
#include "sim/net/ps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the all-gathers of one group carry: two rows of `size` parts of `count` bytes, used by
 * the calls alternately. A member's k-th call writes row k % 2 before the messages and reads it
 * after; no member completes call k + 1 before every member has returned from call k, so row
 * k % 2 is free again when call k + 2 writes it. */
typedef struct gather_board {
    sim_group *comm;
    size_t count;     /* bytes of one member's part */
    uint8_t *rows[2]; /* (size * count) each */
    long *calls;      /* (size) all-gathers each member has made on this group */
    struct gather_board *next;
} gather_board;

/* The last per-layer times computed: the workers of a replay ask for the same layers on the
 * same GPU class every step, and the model's arithmetic over hundreds of layers was most of a
 * replay's wall time. */
typedef struct layer_memo {
    int n; /* layers (0: none yet) */
    sim_compute_cfg cfg;
    sim_compute_host host;
    sim_layer_cost *layers;       /* (n) a copy */
    double *fwd_s, *bwd_s, opt_s; /* (n) each */
} layer_memo;

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
    sim_clocks *clocks;      /* SSP's staleness bound */
    layer_memo memo;
} sx_exchange;

static void result_of(const sim_coll_result *cr, exchange_result *r) {
    if (!r) return;
    r->start_s = cr->start_s;
    r->end_s = cr->end_s;
    r->bytes_sent = cr->bytes_sent;
    r->bytes_recv = cr->bytes_recv;
}

static sim_group *group_of(exchange_group *g) {
    return (sim_group *)g;
}

static double sx_now(void *self) {
    (void)self;
    return sim_now();
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
    int rc = sim_allreduce(group_of(g), member, bytes, &x->coll, &cr);
    result_of(&cr, r);
    return rc;
}

/* A request of this backend: an all-reduce in flight (sim/net/coll/collective.h's request) or one
 * point-to-point message (sim/net/actors.h). */
typedef struct sx_request {
    sim_request *coll;    /* all-reduce, or NULL */
    sim_p2p_request *msg; /* message, or NULL */
} sx_request;

static exchange_request *sx_allreduce_start(void *self, exchange_group *g, int member, float *buf,
                                            size_t count, double bytes) {
    (void)buf;
    (void)count;
    sx_exchange *x = self;
    sx_request *rq = ss_calloc(1, sizeof *rq);
    rq->coll = sim_allreduce_async(group_of(g), member, bytes, &x->coll, NULL, NULL);
    return (exchange_request *)rq;
}

static int sx_test(void *self, const exchange_request *rq) {
    (void)self;
    const sx_request *r = (const sx_request *)rq;
    return r->coll ? sim_request_test(r->coll) : sim_p2p_test(r->msg);
}

static int sx_wait(void *self, exchange_request *rq, exchange_result *r) {
    (void)self;
    sx_request *q = (sx_request *)rq;
    sim_coll_result cr = {0};
    int rc = q->coll ? sim_request_wait(q->coll, &cr) : sim_p2p_wait(q->msg, &cr);
    result_of(&cr, r);
    free(q);
    return rc;
}

static int sx_allreduce_buckets(void *self, exchange_group *g, int member, int n,
                                const double *ready_s, const double *bytes, double *end_s,
                                double *bytes_sent) {
    sx_exchange *x = self;
    /* the closed form holds on a network its own flows alone load */
    if (x->background) return EXCHANGE_NOT_CLOSED;
    int rc =
        sim_allreduce_buckets(group_of(g), member, n, ready_s, bytes, &x->coll, end_s, bytes_sent);
    return rc == SIM_NOT_CLOSED ? EXCHANGE_NOT_CLOSED : rc;
}

static gather_board *board_of(sx_exchange *x, sim_group *c, size_t count) {
    gather_board *b = x->boards;
    while (b && b->comm != c)
        b = b->next;
    if (!b) {
        size_t n = (size_t)sim_group_size(c);
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
    sim_group *c = group_of(g);
    uint8_t *row = NULL;
    if (mine && all && count > 0 && member >= 0 && member < sim_group_size(c)) {
        gather_board *b = board_of(x, c, count);
        row = b->rows[b->calls[member]++ & 1];
        memcpy(row + (size_t)member * count, mine, count);
    }
    sim_coll_result cr = {0};
    int rc = sim_allgather_opts(c, member, bytes, &x->coll, &cr);
    if (rc == SS_OK && row) memcpy(all, row, (size_t)sim_group_size(c) * count);
    result_of(&cr, r);
    return rc;
}

static int sx_broadcast(void *self, exchange_group *g, int member, int root, float *buf,
                        size_t count, double bytes, exchange_result *r) {
    (void)self;
    (void)buf;
    (void)count;
    sim_coll_result cr = {0};
    int rc = sim_broadcast(group_of(g), member, root, bytes, &cr);
    result_of(&cr, r);
    return rc;
}

static int sx_send(void *self, exchange_group *g, int member, int dst, const float *buf,
                   size_t count, double bytes, exchange_result *r) {
    (void)self;
    (void)buf;
    (void)count;
    sim_coll_result cr = {0};
    int rc = sim_send(group_of(g), member, dst, bytes, &cr);
    result_of(&cr, r);
    return rc;
}

static int sx_recv(void *self, exchange_group *g, int member, int src, float *buf, size_t count,
                   double bytes, exchange_result *r) {
    (void)self;
    (void)buf;
    (void)count;
    sim_coll_result cr = {0};
    int rc = sim_recv(group_of(g), member, src, bytes, &cr);
    result_of(&cr, r);
    return rc;
}

/* ---- non-blocking point to point (sim/net/actors.h) ---- */

static exchange_request *sx_send_start(void *self, exchange_group *g, int member, int dst,
                                       const float *buf, size_t count, double bytes) {
    (void)self;
    (void)buf;
    (void)count;
    sx_request *rq = ss_calloc(1, sizeof *rq);
    rq->msg = sim_p2p_send_start(group_of(g), member, dst, bytes);
    return (exchange_request *)rq;
}

static exchange_request *sx_recv_start(void *self, exchange_group *g, int member, int src,
                                       float *buf, size_t count, double bytes) {
    (void)self;
    (void)buf;
    (void)count;
    sx_request *rq = ss_calloc(1, sizeof *rq);
    rq->msg = sim_p2p_recv_start(group_of(g), member, src, bytes);
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

/* ---- SSP's clocks (sim/net/actors.h) ---- */

static long sx_clock_wait(void *self, int worker, long staleness) {
    sx_exchange *x = self;
    return sim_clocks_wait(x->clocks, worker, staleness);
}

static void sx_clock_advance(void *self, int worker, long clock, long *rounds) {
    sx_exchange *x = self;
    sim_clocks_advance(x->clocks, worker, clock, clock == EXCHANGE_CLOCK_DONE ? NULL : rounds);
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

static int sx_run_workers(void *self, int workers, void (*worker)(void *ctx, int w), void *ctx,
                          exchange_hosted *out) {
    sx_exchange *x = self;
    memset(out, 0, sizeof *out);
    if (x->ran) return ss_error_set(SS_EUSAGE, "exchange: run_workers is called once per exchange");
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
    int rc = sim_cluster_simulate(x->cluster, &out->end_s);
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
    sim_actor_compute(flops, seconds);
    return SS_OK;
}

static int memo_hit(const layer_memo *m, const sim_compute_cfg *cfg, const sim_compute_host *h,
                    const sim_layer_cost *layers, int n) {
    return m->n == n && n > 0 && m->cfg.mode == cfg->mode && m->cfg.scale == cfg->scale &&
           m->cfg.precision == cfg->precision && m->cfg.gpu == cfg->gpu &&
           m->cfg.framework == cfg->framework && m->cfg.host_sync == cfg->host_sync &&
           m->host.speed_flops == h->speed_flops && m->host.gpu == h->gpu &&
           memcmp(m->layers, layers, sizeof *layers * (size_t)n) == 0;
}

static int sx_layer_times(void *self, int worker, const sim_compute_cfg *cfg,
                          const sim_layer_cost *layers, int n, double *fwd_s, double *bwd_s,
                          double *optimizer_s) {
    sx_exchange *x = self;
    layer_memo *m = &x->memo;
    const sim_compute_host *h = host_of(x, worker);
    if (!memo_hit(m, cfg, h, layers, n)) {
        int rc = sim_compute_layers(cfg, h, layers, n, fwd_s, bwd_s, optimizer_s);
        if (rc != SS_OK || n <= 0) return rc;
        free(m->layers);
        free(m->fwd_s);
        m->layers = ss_malloc(sizeof *layers * (size_t)n);
        m->fwd_s = ss_malloc(sizeof(double) * 2 * (size_t)n);
        m->bwd_s = m->fwd_s + n;
        memcpy(m->layers, layers, sizeof *layers * (size_t)n);
        memcpy(m->fwd_s, fwd_s, sizeof(double) * (size_t)n);
        memcpy(m->bwd_s, bwd_s, sizeof(double) * (size_t)n);
        m->opt_s = *optimizer_s;
        m->cfg = *cfg;
        m->host = *h;
        m->n = n;
        return SS_OK;
    }
    memcpy(fwd_s, m->fwd_s, sizeof(double) * (size_t)n);
    memcpy(bwd_s, m->bwd_s, sizeof(double) * (size_t)n);
    *optimizer_s = m->opt_s;
    return SS_OK;
}

static const exchange_ops sx_ops = {.name = "simgrid",
                                    .now = sx_now,
                                    .run_workers = sx_run_workers,
                                    .compute = sx_compute,
                                    .layer_times = sx_layer_times,
                                    .group = sx_group,
                                    .allreduce = sx_allreduce,
                                    .allreduce_start = sx_allreduce_start,
                                    .test = sx_test,
                                    .wait = sx_wait,
                                    .allreduce_buckets = sx_allreduce_buckets,
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
    x->hosts = ss_calloc((size_t)x->n_workers, sizeof *x->hosts);
    x->host_known = ss_calloc((size_t)x->n_workers, 1);
    int rc = sim_coll_check(sim_cluster_world(cluster), &o->coll, "--collective");
    if (rc != SS_OK) {
        free(x->host_known);
        free(x->hosts);
        free(x);
        return rc;
    }
    x->clocks = sim_clocks_create(x->n_workers);
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
    sim_clocks_destroy(x->clocks);
    free(x->memo.layers);
    free(x->memo.fwd_s);
    free(x->host_known);
    free(x->hosts);
    free(x);
}
