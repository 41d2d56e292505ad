/* The MPI exchange's parameter servers: the workers' push, pull and clock calls, and the server
 * ranks' loop (see exchange_mpi.h).
 *
 * The PS protocol: every request is a fixed ps_header on ps_ctl, tag TAG_HDR; a server receives
 * them from any source in arrival order (one MPI_Recv with MPI_ANY_SOURCE drives its loop). A
 * push's shard follows its header on ps_data (TAG_PUSH_DATA, from the same worker: received
 * right after the header); a pull's reply goes back on ps_data (TAG_PULL_DATA) into a receive
 * the worker posted before its request. Acks (pushes) and clock replies are headers on ps_ctl
 * with tags of their own. */
#include "sim/exchange/exchange_mpi_internal.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

/* ---------------------------------------------------------------- parameter servers: workers */

/* Shard s of a P-vector over K servers (exchange.h). */
static void shard_of(size_t p, int k, int s, size_t *off, size_t *len) {
    size_t b = p / (size_t)k, r = p % (size_t)k, us = (size_t)s;
    *off = us * b + (us < r ? us : r);
    *len = b + (us < r);
}

/* The simulated PS's shard of `bytes` (sim/net/ps.c): equal parts, the remainder over the first. */
static double shard_wire(double bytes, int k, int n) {
    double base = floor(bytes / n), rem = bytes - base * n;
    long b = lround(base + (k < rem ? 1 : 0) + (k == n - 1 ? rem - floor(rem) : 0));
    return (double)(b < 0 ? 0 : b);
}

static int server_rank(const mx_exchange *x, int s) {
    return x->n_workers + s;
}

static int check_worker(const mx_exchange *x, int worker, size_t count, double bytes,
                        const char *what) {
    if (!x->ps_started) return ss_error_set(SS_EUSAGE, "%s: ps_start was not called", what);
    if (x->n_servers < 1)
        return ss_error_set(SS_EUSAGE, "%s: no parameter server (opened with 0 servers)", what);
    if (worker < 0 || worker >= x->n_workers || worker != x->rank)
        return ss_error_set(SS_EUSAGE,
                            "%s: worker %d from rank %d (workers 0..%d, each its own "
                            "rank)",
                            what, worker, x->rank, x->n_workers - 1);
    if (count < (size_t)x->n_servers || count > (size_t)INT32_MAX)
        return ss_error_set(SS_EUSAGE, "%s: %zu elements over %d servers (%d..%d)", what, count,
                            x->n_servers, x->n_servers, INT32_MAX);
    if (!(bytes > 0) || !isfinite(bytes))
        return ss_error_set(SS_EUSAGE, "%s: size %g bytes, need > 0", what, bytes);
    return SS_OK;
}

int mx_ps_push(void *self, int worker, const float *buf, size_t count, double bytes, int64_t round,
               exchange_result *r) {
    mx_exchange *x = self;
    double t0 = mx_now(x);
    int rc = check_worker(x, worker, count, bytes, "ps_push"), k = x->n_servers;
    if (rc != SS_OK) {
        result_set(r, t0, t0, 0, 0);
        return rc;
    }
    const mpi_api *mpi = x->mpi;
    const float *b = buf ? buf : grow(&x->scratch, &x->scratch_n, count);
    ps_header *h = ss_calloc((size_t)k, sizeof *h);
    void **rq = ss_calloc((size_t)2 * k, sizeof *rq);
    double sent = 0;
    for (int s = 0; s < k && rc == SS_OK; s++) {
        size_t off, len;
        shard_of(count, k, s, &off, &len);
        h[s] = (ps_header){MSG_PUSH, worker, round, (int64_t)count};
        rc = check_mpi(mpi->isend(&h[s], sizeof *h, mpi->type_byte, server_rank(x, s), TAG_HDR,
                                  x->ps_ctl, &rq[2 * s]),
                       "MPI_Isend");
        if (rc == SS_OK)
            rc = check_mpi(mpi->isend(b + off, (int)len, mpi->type_float, server_rank(x, s),
                                      TAG_PUSH_DATA, x->ps_data, &rq[2 * s + 1]),
                           "MPI_Isend");
        sent += shard_wire(bytes, s, k);
    }
    if (rc == SS_OK) rc = check_mpi(mpi->waitall(2 * k, rq, MPI_API_STATUS_IGNORE), "MPI_Waitall");
    /* each server acknowledges once its on_push ran */
    for (int s = 0; s < k && rc == SS_OK; s++)
        rc = check_mpi(mpi->recv(&h[s], sizeof *h, mpi->type_byte, server_rank(x, s), TAG_ACK,
                                 x->ps_ctl, MPI_API_STATUS_IGNORE),
                       "MPI_Recv");
    free(rq);
    free(h);
    result_set(r, t0, mx_now(x), rc == SS_OK ? sent : 0, 0);
    return rc;
}

int mx_ps_pull(void *self, int worker, float *buf, size_t count, double bytes, int64_t round,
               exchange_result *r) {
    mx_exchange *x = self;
    double t0 = mx_now(x);
    int rc = check_worker(x, worker, count, bytes, "ps_pull"), k = x->n_servers;
    if (rc != SS_OK) {
        result_set(r, t0, t0, 0, 0);
        return rc;
    }
    const mpi_api *mpi = x->mpi;
    float *b = buf ? buf : grow(&x->scratch, &x->scratch_n, count);
    ps_header *h = ss_calloc((size_t)k, sizeof *h);
    void **rq = ss_calloc((size_t)2 * k, sizeof *rq);
    double recv = 0;
    /* the replies' receives first, so that a server's reply never waits for them */
    for (int s = 0; s < k && rc == SS_OK; s++) {
        size_t off, len;
        shard_of(count, k, s, &off, &len);
        rc = check_mpi(mpi->irecv(b + off, (int)len, mpi->type_float, server_rank(x, s),
                                  TAG_PULL_DATA, x->ps_data, &rq[2 * s]),
                       "MPI_Irecv");
        h[s] = (ps_header){MSG_PULL, worker, round, (int64_t)count};
        if (rc == SS_OK)
            rc = check_mpi(mpi->isend(&h[s], sizeof *h, mpi->type_byte, server_rank(x, s), TAG_HDR,
                                      x->ps_ctl, &rq[2 * s + 1]),
                           "MPI_Isend");
        recv += shard_wire(bytes, s, k);
    }
    if (rc == SS_OK) rc = check_mpi(mpi->waitall(2 * k, rq, MPI_API_STATUS_IGNORE), "MPI_Waitall");
    free(rq);
    free(h);
    result_set(r, t0, mx_now(x), 0, rc == SS_OK ? recv : 0);
    return rc;
}

int mx_ps_push_pull(void *self, int worker, float *buf, size_t count, double bytes, int64_t round,
                    exchange_result *r) {
    exchange_result a = {0}, b = {0};
    int rc = mx_ps_push(self, worker, buf, count, bytes, round, &a);
    if (rc == SS_OK) rc = mx_ps_pull(self, worker, buf, count, bytes, round, &b);
    if (rc != SS_OK) b.end_s = a.end_s;
    result_set(r, a.start_s, rc == SS_OK ? b.end_s : a.end_s, a.bytes_sent + b.bytes_sent,
               a.bytes_recv + b.bytes_recv);
    return rc;
}

int mx_ps_start(void *self, const exchange_ps_opts *o) {
    mx_exchange *x = self;
    if (x->ps_started)
        return ss_error_set(SS_EUSAGE, "exchange: the parameter servers run already");
    if (o->n_servers != x->n_servers)
        return ss_error_set(SS_EUSAGE,
                            "ps_start: %d servers, but the exchange was opened with %d server "
                            "ranks",
                            o->n_servers, x->n_servers);
    x->ps = *o;
    x->ps_started = 1;
    return SS_OK;
}

/* ---------------------------------------------------------------- SSP's clocks (server 0) */

long mx_clock_wait(void *self, int worker, long staleness) {
    mx_exchange *x = self;
    const mpi_api *mpi = x->mpi;
    if (x->n_servers < 1 || worker != x->rank) {
        ss_error_set(SS_EUSAGE,
                     "clock_wait: worker %d on rank %d, %d servers (needs its own rank "
                     "and a server)",
                     worker, x->rank, x->n_servers);
        return 0;
    }
    ps_header h = {MSG_CLOCK_WAIT, worker, 0, staleness};
    if (check_mpi(mpi->send(&h, sizeof h, mpi->type_byte, server_rank(x, 0), TAG_HDR, x->ps_ctl),
                  "MPI_Send") != SS_OK ||
        check_mpi(mpi->recv(&h, sizeof h, mpi->type_byte, server_rank(x, 0), TAG_CLOCK, x->ps_ctl,
                            MPI_API_STATUS_IGNORE),
                  "MPI_Recv") != SS_OK)
        return 0;
    return (long)h.value;
}

void mx_clock_advance(void *self, int worker, long clock, long *rounds) {
    (void)rounds; /* a worker cannot see the slowest clock move: see exchange_mpi.h */
    mx_exchange *x = self;
    const mpi_api *mpi = x->mpi;
    if (x->n_servers < 1 || worker != x->rank) {
        ss_error_set(SS_EUSAGE,
                     "clock_advance: worker %d on rank %d, %d servers (needs its own "
                     "rank and a server)",
                     worker, x->rank, x->n_servers);
        return;
    }
    ps_header h = {MSG_CLOCK_ADVANCE, worker, 0, clock};
    check_mpi(mpi->send(&h, sizeof h, mpi->type_byte, server_rank(x, 0), TAG_HDR, x->ps_ctl),
              "MPI_Send");
}

int exchange_mpi_worker_done(exchange *ex, int worker) {
    mx_exchange *x = ex->self;
    if (worker != x->rank || worker >= x->n_workers)
        return ss_error_set(SS_EUSAGE, "worker_done: worker %d on rank %d (workers 0..%d)", worker,
                            x->rank, x->n_workers - 1);
    /* the servers serve until every worker says it is done; servers not started listen to none
     * (the message would stay queued for a later exchange's server loop) */
    if (!x->ps_started) return SS_OK;
    ps_header h = {MSG_DONE, worker, 0, 0};
    for (int s = 0; s < x->n_servers; s++) {
        int rc = check_mpi(
            x->mpi->send(&h, sizeof h, x->mpi->type_byte, server_rank(x, s), TAG_HDR, x->ps_ctl),
            "MPI_Send");
        if (rc != SS_OK) return rc;
    }
    return SS_OK;
}

/* ---------------------------------------------------------------- parameter servers: servers */

#define NOT_WAITING LONG_MIN

/* Every transfer of a server is in flight at once, as the simulated servers keep a receive
 * posted per worker (sim/net/ps.h): concurrent pushes share the server's link instead of arriving
 * one after the other. A reply leaves from a copy, taken when the pull is answered. */
static srv_op *srv_op_add(mx_exchange *x) {
    if (x->n_ops == x->cap_ops) {
        x->cap_ops = x->cap_ops ? 2 * x->cap_ops : 16;
        x->ops = realloc(x->ops, (size_t)x->cap_ops * sizeof *x->ops);
        SS_ASSERT(x->ops != NULL);
    }
    srv_op *op = &x->ops[x->n_ops++];
    memset(op, 0, sizeof *op);
    return op;
}

static int srv_reply(mx_exchange *x, const float *src, size_t len, int worker) {
    srv_op *op = srv_op_add(x);
    op->data = ss_malloc((len ? len : 1) * sizeof(float));
    if (src)
        memcpy(op->data, src, len * sizeof(float));
    else
        memset(op->data, 0, len * sizeof(float));
    op->len = len;
    return check_mpi(x->mpi->isend(op->data, (int)len, x->mpi->type_float, worker, TAG_PULL_DATA,
                                   x->ps_data, &op->rq),
                     "MPI_Isend");
}

static int srv_ack(mx_exchange *x, const ps_header *h) {
    return check_mpi(x->mpi->send(h, sizeof *h, x->mpi->type_byte, h->worker, TAG_ACK, x->ps_ctl),
                     "MPI_Send");
}

static srv_round *srv_round_of(mx_exchange *x, int64_t round, size_t off, size_t len) {
    for (srv_round *q = x->rounds; q; q = q->next)
        if (q->round == round) return q;
    srv_round *q = ss_calloc(1, sizeof *q);
    q->round = round;
    q->off = off;
    q->len = len;
    q->sum = ss_calloc(len ? len : 1, sizeof(float));
    q->waiting = ss_calloc((size_t)x->n_workers, sizeof(int));
    q->next = x->rounds;
    x->rounds = q;
    return q;
}

static void srv_round_free(mx_exchange *x, srv_round *q) {
    srv_round **p = &x->rounds;
    while (*p != q)
        p = &(*p)->next;
    *p = q->next;
    free(q->sum);
    free(q->waiting);
    free(q);
}

/* A synchronous round's pull, answered with the sum (every push of the round arrived). */
static int srv_sync_answer(mx_exchange *x, int s, srv_round *q, int worker) {
    const exchange_ps_hooks *hk = &x->ps.hooks;
    if (hk->on_pull) hk->on_pull(hk->ctx, s, worker, q->round);
    int rc = srv_reply(x, q->sum, q->len, worker);
    if (++q->pulls == x->n_workers) srv_round_free(x, q);
    return rc;
}

/* A push's header: its data's receive is posted, and completes in the server loop. */
static int srv_push(mx_exchange *x, int s, const ps_header *h, size_t off, size_t len) {
    const exchange_ps_hooks *hk = &x->ps.hooks;
    srv_op *op = srv_op_add(x);
    op->is_push = 1;
    op->h = *h;
    op->len = len;
    float *dst;
    if (x->ps.async) {
        op->base = hk->push_buffer ? hk->push_buffer(hk->ctx, s, h->worker) : NULL;
        dst = op->base ? op->base + off : grow(&x->shard_scratch, &x->shard_scratch_n, len);
    } else {
        srv_round *q = srv_round_of(x, h->round, off, len);
        if (q->len != len)
            return ss_error_set(SS_EUSAGE, "server %d: round %lld pushed with %zu and %zu elements",
                                s, (long long)h->round, q->len, len);
        dst = op->data = ss_malloc((len ? len : 1) * sizeof(float));
    }
    return check_mpi(x->mpi->irecv(dst, (int)len, x->mpi->type_float, h->worker, TAG_PUSH_DATA,
                                   x->ps_data, &op->rq),
                     "MPI_Irecv");
}

/* A push's data arrived: the hooks run now, the worker is acknowledged, and a synchronous round
 * that is complete answers the pulls that came early. */
static int srv_push_done(mx_exchange *x, int s, srv_op *op) {
    const exchange_ps_hooks *hk = &x->ps.hooks;
    const ps_header *h = &op->h;
    if (x->ps.async) {
        if (hk->on_push) hk->on_push(hk->ctx, s, h->worker, h->round, op->base);
        return srv_ack(x, h);
    }
    srv_round *q = srv_round_of(x, h->round, 0, op->len);
    for (size_t i = 0; i < op->len; i++)
        q->sum[i] += op->data[i];
    q->pushes++;
    if (hk->on_push) hk->on_push(hk->ctx, s, h->worker, h->round, NULL);
    int rc = srv_ack(x, h);
    if (rc != SS_OK || q->pushes < x->n_workers) return rc;
    int n = x->n_workers;
    for (int w = 0; w < n && rc == SS_OK; w++)
        if (q->waiting[w]) {
            q->waiting[w] = 0;
            int last = q->pulls + 1 == n;
            rc = srv_sync_answer(x, s, q, w);
            if (last) break;
        }
    return rc;
}

static int srv_pull(mx_exchange *x, int s, const ps_header *h, size_t off, size_t len) {
    const exchange_ps_hooks *hk = &x->ps.hooks;
    if (x->ps.async) {
        if (hk->on_pull) hk->on_pull(hk->ctx, s, h->worker, h->round);
        float *base = hk->pull_buffer ? hk->pull_buffer(hk->ctx, s) : NULL;
        return srv_reply(x, base ? base + off : NULL, len, h->worker);
    }
    srv_round *q = srv_round_of(x, h->round, off, len);
    if (q->pushes < x->n_workers) {
        q->waiting[h->worker] = 1;
        return SS_OK;
    }
    return srv_sync_answer(x, s, q, h->worker);
}

static long srv_min_clock(const mx_exchange *x) {
    long m = x->clock[0];
    for (int i = 1; i < x->n_workers; i++)
        if (x->clock[i] < m) m = x->clock[i];
    return m;
}

/* Answers worker w's clock_wait if its bound allows it now. */
static int srv_clock_release(mx_exchange *x, int w) {
    long staleness = x->clock_waiting[w];
    if (staleness == NOT_WAITING) return SS_OK;
    long gap = x->clock[w] - srv_min_clock(x);
    if (staleness >= 0 && gap > staleness) return SS_OK;
    x->clock_waiting[w] = NOT_WAITING;
    ps_header h = {MSG_CLOCK_WAIT, w, 0, gap};
    return check_mpi(x->mpi->send(&h, sizeof h, x->mpi->type_byte, w, TAG_CLOCK, x->ps_ctl),
                     "MPI_Send");
}

static int srv_clock(mx_exchange *x, int s, const ps_header *h) {
    if (s != 0) return ss_error_set(SS_EUSAGE, "server %d received a clock message", s);
    int rc = SS_OK;
    if (h->type == MSG_CLOCK_WAIT) {
        x->clock_waiting[h->worker] = (long)h->value;
        return srv_clock_release(x, h->worker);
    }
    x->clock[h->worker] = (long)h->value;
    for (int w = 0; w < x->n_workers && rc == SS_OK; w++)
        rc = srv_clock_release(x, w);
    return rc;
}

static int srv_dispatch(mx_exchange *x, int s, const ps_header *h, const mpi_status *st,
                        int *done) {
    if (h->worker != st->source || h->worker < 0 || h->worker >= x->n_workers)
        return ss_error_set(SS_EIO, "server %d: message of worker %d from rank %d", s, h->worker,
                            st->source);
    if (h->type == MSG_DONE) {
        (*done)++;
        /* a worker that is done (at its last step, or stopped early by an interruption) holds
         * no other back: its clock leaves SSP's minimum */
        if (s == 0 && x->clock) {
            x->clock[h->worker] = LONG_MAX;
            int rc = SS_OK;
            for (int w = 0; w < x->n_workers && rc == SS_OK; w++)
                rc = srv_clock_release(x, w);
            return rc;
        }
        return SS_OK;
    }
    if (h->type == MSG_CLOCK_WAIT || h->type == MSG_CLOCK_ADVANCE) return srv_clock(x, s, h);
    if (h->value < x->n_servers || h->value > INT32_MAX)
        return ss_error_set(SS_EIO, "server %d: vector of %lld elements", s, (long long)h->value);
    size_t off, len;
    shard_of((size_t)h->value, x->n_servers, s, &off, &len);
    if (h->type == MSG_PUSH) return srv_push(x, s, h, off, len);
    if (h->type == MSG_PULL) return srv_pull(x, s, h, off, len);
    return ss_error_set(SS_EIO, "server %d: unknown message type %d", s, (int)h->type);
}

int exchange_mpi_serve(exchange *ex) {
    mx_exchange *x = ex->self;
    if (x->rank < x->n_workers)
        return ss_error_set(SS_EUSAGE, "serve: rank %d is a worker (servers: ranks %d..%d)",
                            x->rank, x->n_workers, x->n_workers + x->n_servers - 1);
    if (!x->ps_started) return ss_error_set(SS_EUSAGE, "serve: ps_start was not called");
    const int s = x->rank - x->n_workers, n = x->n_workers;
    x->clock = ss_calloc((size_t)n, sizeof(long));
    x->clock_waiting = ss_malloc((size_t)n * sizeof(long));
    for (int w = 0; w < n; w++)
        x->clock_waiting[w] = NOT_WAITING;
    int rc = SS_OK, done = 0;
    ps_header h;
    void *hdr_rq = x->mpi->request_null;
    void **rqs = NULL;
    /* one header receive posted at a time, beside every transfer in flight */
    while (rc == SS_OK && (done < n || x->n_ops > 0)) {
        if (done < n && hdr_rq == x->mpi->request_null)
            rc = check_mpi(x->mpi->irecv(&h, sizeof h, x->mpi->type_byte, MPI_API_ANY_SOURCE,
                                         TAG_HDR, x->ps_ctl, &hdr_rq),
                           "MPI_Irecv");
        rqs = realloc(rqs, sizeof(void *) * (size_t)(x->n_ops + 1));
        SS_ASSERT(rqs != NULL);
        rqs[0] = hdr_rq;
        for (int i = 0; i < x->n_ops; i++)
            rqs[i + 1] = x->ops[i].rq;
        int idx = -1;
        mpi_status st;
        if (rc == SS_OK)
            rc = check_mpi(x->mpi->waitany(x->n_ops + 1, rqs, &idx, &st), "MPI_Waitany");
        if (rc != SS_OK || idx < 0) break;
        if (idx == 0) {
            hdr_rq = x->mpi->request_null;
            rc = srv_dispatch(x, s, &h, &st, &done);
            continue;
        }
        srv_op op = x->ops[idx - 1]; /* removed before it runs: it may add transfers */
        x->ops[idx - 1] = x->ops[--x->n_ops];
        if (op.is_push) rc = srv_push_done(x, s, &op);
        free(op.data);
    }
    free(rqs);
    for (int i = 0; i < x->n_ops; i++)
        free(x->ops[i].data);
    free(x->ops);
    x->ops = NULL;
    x->n_ops = x->cap_ops = 0;
    while (x->rounds)
        srv_round_free(x, x->rounds);
    free(x->clock);
    free(x->clock_waiting);
    x->clock = NULL;
    x->clock_waiting = NULL;
    return rc;
}
