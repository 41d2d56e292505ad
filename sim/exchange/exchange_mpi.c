/* The exchange over MPI (see exchange_mpi.h). Every call goes through common/mpi_api.h.
 *
 * Communicators: `world` (a duplicate of MPI_COMM_WORLD) carries the runner's side channel;
 * `workers` (MPI_Comm_split of the workers, rank = worker index) is the group of all workers and
 * the parent of every other group (MPI_Comm_create_group, collective over its members only);
 * `ps_ctl` and `ps_data` (duplicates of the world) carry the parameter servers' protocol.
 *
 * The PS protocol: every request is a fixed ps_header on ps_ctl, tag TAG_HDR; a server receives
 * them from any source in arrival order (one MPI_Recv with MPI_ANY_SOURCE drives its loop). A
 * push's shard follows its header on ps_data (TAG_PUSH_DATA, from the same worker: received
 * right after the header); a pull's reply goes back on ps_data (TAG_PULL_DATA) into a receive
 * the worker posted before its request. Acks (pushes) and clock replies are headers on ps_ctl
 * with tags of their own. */
#include "sim/exchange/exchange_mpi.h"
#include "common/mpi_api.h"
#include "common/status.h"

#include <math.h>
#include <stdint.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MX_MAX_IN_FLIGHT 16 /* non-blocking all-reduces per group (exchange.h) */

/* Tags: point to point on a group's communicator, blocking and non-blocking matched apart. */
enum { TAG_P2P = 1, TAG_P2P_NB = 2 };
/* Tags of the PS protocol (ps_ctl: headers, acks, clock replies; ps_data: shards). */
enum { TAG_HDR = 10, TAG_ACK = 11, TAG_CLOCK = 12, TAG_PUSH_DATA = 13, TAG_PULL_DATA = 14 };
enum { MSG_PUSH = 1, MSG_PULL, MSG_CLOCK_ADVANCE, MSG_CLOCK_WAIT, MSG_DONE };

/* One PS message header; `value`: a push or pull's vector length, a clock, a staleness bound,
 * or (replies) the gap. */
typedef struct ps_header {
    int32_t type;
    int32_t worker;
    int64_t round;
    int64_t value;
} ps_header;

typedef struct mx_group {
    int *members; /* (m) sorted world ranks; NULL: every worker */
    int m;
    void *comm;
    int in_flight; /* non-blocking all-reduces not yet completed */
    struct mx_group *next;
} mx_group;

/* A synchronous PS round on a server: the sum of its pushes, the pulls waiting for it. */
typedef struct srv_round {
    int64_t round;
    float *sum; /* (len) this server's shard */
    size_t off, len;
    int pushes, pulls;
    int *waiting; /* (n_workers) 1: that worker's pull waits for the last push */
    struct srv_round *next;
} srv_round;

/* A server's transfer in flight: a push's data being received, or a reply being sent. */
typedef struct srv_op {
    void *rq;
    int is_push;
    ps_header h; /* push: its header */
    float *base; /* push: the push_buffer given to on_push (NULL: none) */
    float *data; /* push (sync): the received shard; reply: a copy of what leaves (owned) */
    size_t len;
} srv_op;

typedef struct mx_exchange {
    exchange ex;
    const mpi_api *mpi;
    int rank, n_workers, n_servers;
    void *world, *workers, *servers, *ps_ctl, *ps_data;
    void *votes;   /* workers: a duplicate of `workers` for the stop votes */
    void *vote_rq; /* the vote in flight (posted, not waited) or NULL */
    int vote_mine, vote_any;
    mx_group *all, *groups;
    double t0_s;
    float *scratch; /* blocking calls' stand-in for a NULL buffer */
    size_t scratch_n;
    int ps_started;
    exchange_ps_opts ps;
    /* server state */
    srv_round *rounds;
    long *clock;          /* (n_workers) server 0: the workers' clocks */
    long *clock_waiting;  /* (n_workers) staleness of a waiting clock_wait, or -1 */
    float *shard_scratch; /* async pushes without a push_buffer */
    size_t shard_scratch_n;
    srv_op *ops; /* transfers in flight */
    int n_ops, cap_ops;
} mx_exchange;

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double mx_now(void *self) {
    const mx_exchange *x = self;
    return mono_s() - x->t0_s;
}

static float *grow(float **p, size_t *cap, size_t n) {
    if (n > *cap) {
        free(*p);
        *p = ss_calloc(n, sizeof(float));
        *cap = n;
    }
    return *p;
}

static int check_mpi(int code, const char *what) {
    return mpi_api_check(code, what);
}

/* ---------------------------------------------------------------- groups */

static int group_size(const mx_exchange *x, const mx_group *g) {
    return g->members ? g->m : x->n_workers;
}

static int group_rank_of(const mx_group *g, int rank) {
    if (!g->members) return rank;
    for (int i = 0; i < g->m; i++)
        if (g->members[i] == rank) return i;
    return -1;
}

static int check_list(const mx_exchange *x, const int *members, int m) {
    if (m < 1 || m > x->n_workers)
        return ss_error_set(SS_EUSAGE, "exchange group: %d members (1..%d workers)", m,
                            x->n_workers);
    int mine = 0;
    for (int i = 0; i < m; i++) {
        if (members[i] < 0 || members[i] >= x->n_workers || (i > 0 && members[i] <= members[i - 1]))
            return ss_error_set(SS_EUSAGE,
                                "exchange group: member %d is %d (workers 0..%d, sorted, "
                                "distinct)",
                                i, members[i], x->n_workers - 1);
        mine |= members[i] == x->rank;
    }
    if (!mine)
        return ss_error_set(SS_EUSAGE, "exchange group: rank %d asks for a group it is not in",
                            x->rank);
    return SS_OK;
}

/* A tag from the list, so that groups made at the same time by overlapping callers differ. */
static int list_tag(const int *members, int m) {
    uint32_t h = 2166136261u;
    for (int i = 0; i < m; i++)
        h = (h ^ (uint32_t)members[i]) * 16777619u;
    return 100 + (int)(h % 30000u);
}

static int create_comm(mx_exchange *x, const int *members, int m, void **comm) {
    const mpi_api *mpi = x->mpi;
    void *all = NULL, *sub = NULL;
    int rc = check_mpi(mpi->comm_group(x->workers, &all), "MPI_Comm_group");
    if (rc == SS_OK) rc = check_mpi(mpi->group_incl(all, m, members, &sub), "MPI_Group_incl");
    if (rc == SS_OK)
        rc = check_mpi(mpi->comm_create_group(x->workers, sub, list_tag(members, m), comm),
                       "MPI_Comm_create_group");
    if (sub) mpi->group_free(&sub);
    if (all) mpi->group_free(&all);
    return rc;
}

static exchange_group *mx_group_of(void *self, const int *members, int m) {
    mx_exchange *x = self;
    if (x->rank >= x->n_workers) {
        ss_error_set(SS_EUSAGE, "exchange group: rank %d is a server, not a worker", x->rank);
        return NULL;
    }
    if (!members) return (exchange_group *)x->all;
    if (check_list(x, members, m) != SS_OK) return NULL;
    for (mx_group *g = x->groups; g; g = g->next)
        if (g->m == m && memcmp(g->members, members, (size_t)m * sizeof(int)) == 0)
            return (exchange_group *)g;
    void *comm = NULL;
    if (create_comm(x, members, m, &comm) != SS_OK) return NULL;
    mx_group *g = ss_calloc(1, sizeof *g);
    g->members = ss_malloc((size_t)m * sizeof(int));
    memcpy(g->members, members, (size_t)m * sizeof(int));
    g->m = m;
    g->comm = comm;
    g->next = x->groups;
    x->groups = g;
    return (exchange_group *)g;
}

/* The checks every group call makes: a group, this rank as `member`, a count MPI can take. */
static int check_call(const mx_exchange *x, const exchange_group *eg, int member, size_t count,
                      double bytes, const char *what) {
    const mx_group *g = (const mx_group *)eg;
    if (!g) return ss_error_set(SS_EUSAGE, "%s: no group (NULL)", what);
    int m = group_size(x, g);
    if (member < 0 || member >= m || group_rank_of(g, x->rank) != member)
        return ss_error_set(SS_EUSAGE, "%s: member %d (group of %d: this rank %d is member %d)",
                            what, member, m, x->rank, group_rank_of(g, x->rank));
    if (count > (size_t)INT32_MAX)
        return ss_error_set(SS_EUSAGE, "%s: %zu elements (MPI takes at most %d)", what, count,
                            INT32_MAX);
    if (!(bytes >= 0) || !isfinite(bytes))
        return ss_error_set(SS_EUSAGE, "%s: %g bytes (need >= 0)", what, bytes);
    return SS_OK;
}

static int check_peer(const mx_exchange *x, const exchange_group *eg, int member, int peer,
                      const char *what) {
    int m = group_size(x, (const mx_group *)eg);
    if (peer < 0 || peer >= m || peer == member)
        return ss_error_set(SS_EUSAGE, "%s: peer %d (group of %d: members 0..%d but %d)", what,
                            peer, m, m - 1, member);
    return SS_OK;
}

/* ---------------------------------------------------------------- nominal volumes */

/* Whole bytes, never below one, as the simulated collectives send. */
static double wire_bytes(double bytes) {
    long b = lround(bytes);
    return (double)(b < 1 ? 1 : b);
}

/* The ring all-reduce: 2 (m - 1) chunks of bytes / m each way. */
static double ring_bytes(double bytes, int m) {
    return m < 2 ? 0 : 2.0 * (m - 1) * wire_bytes(bytes / m);
}

/* Bruck's all-gather: step d (1, 2, 4, ...) sends and receives min(d, m - d) parts. */
static double bruck_bytes(double part_bytes, int m) {
    double total = 0;
    for (int d = 1; d < m; d *= 2)
        total += wire_bytes((d < m - d ? d : m - d) * part_bytes);
    return total;
}

/* The binomial broadcast: one message per child of `rel` (relative rank). */
static int binomial_children(int rel, int m) {
    int mask = 1, n = 0;
    while (mask < m && !(rel & mask))
        mask <<= 1;
    for (mask >>= 1; mask > 0; mask >>= 1)
        n += rel + mask < m;
    return n;
}

static void result_set(exchange_result *r, double start_s, double end_s, double sent, double recv) {
    if (!r) return;
    r->start_s = start_s;
    r->end_s = end_s;
    r->bytes_sent = sent;
    r->bytes_recv = recv;
}

/* ---------------------------------------------------------------- collectives */

static int mx_allreduce(void *self, exchange_group *eg, int member, float *buf, size_t count,
                        double bytes, exchange_result *r) {
    mx_exchange *x = self;
    double t0 = mx_now(x);
    int rc = check_call(x, eg, member, count, bytes, "allreduce");
    if (rc == SS_OK) {
        const mx_group *g = (const mx_group *)eg;
        float *b = buf ? buf : grow(&x->scratch, &x->scratch_n, count);
        rc = check_mpi(x->mpi->allreduce(MPI_API_IN_PLACE, b, (int)count, x->mpi->type_float,
                                         x->mpi->op_sum, g->comm),
                       "MPI_Allreduce");
    }
    double sent = rc == SS_OK ? ring_bytes(bytes, group_size(x, (mx_group *)eg)) : 0;
    result_set(r, t0, mx_now(x), sent, sent);
    return rc;
}

/* A non-blocking operation: an all-reduce (group set) or one message. */
typedef struct mx_request {
    void *req; /* MPI's request until observed complete */
    int done;
    int status;
    mx_group *g;    /* all-reduce: its group, whose in_flight it counts in */
    float *scratch; /* the stand-in for a NULL buffer, freed with the request */
    exchange_result res;
} mx_request;

static mx_request *request_new(mx_exchange *x) {
    mx_request *q = ss_calloc(1, sizeof *q);
    q->res.start_s = q->res.end_s = mx_now(x);
    return q;
}

static mx_request *request_failed(mx_request *q, int status) {
    q->done = 1;
    q->status = status;
    return q;
}

static exchange_request *mx_allreduce_start(void *self, exchange_group *eg, int member, float *buf,
                                            size_t count, double bytes) {
    mx_exchange *x = self;
    mx_request *q = request_new(x);
    int rc = check_call(x, eg, member, count, bytes, "allreduce_start");
    mx_group *g = (mx_group *)eg;
    if (rc == SS_OK && g->in_flight >= MX_MAX_IN_FLIGHT)
        rc = ss_error_set(SS_EUSAGE,
                          "allreduce_start: %d all-reduces in flight on the group "
                          "already (at most %d)",
                          g->in_flight, MX_MAX_IN_FLIGHT);
    if (rc != SS_OK) return (exchange_request *)request_failed(q, rc);
    float *b = buf;
    if (!b) b = q->scratch = ss_calloc(count ? count : 1, sizeof(float));
    rc = check_mpi(x->mpi->iallreduce(MPI_API_IN_PLACE, b, (int)count, x->mpi->type_float,
                                      x->mpi->op_sum, g->comm, &q->req),
                   "MPI_Iallreduce");
    if (rc != SS_OK) return (exchange_request *)request_failed(q, rc);
    q->g = g;
    g->in_flight++;
    q->res.bytes_sent = q->res.bytes_recv = ring_bytes(bytes, group_size(x, g));
    return (exchange_request *)q;
}

static void request_complete(mx_exchange *x, mx_request *q, int status) {
    q->done = 1;
    q->status = status;
    q->res.end_s = mx_now(x);
    if (q->g) q->g->in_flight--;
    q->g = NULL;
}

/* test() completes the MPI request when it has finished, hence the cast (as the simulation
 * backend's test releases its comm). */
static int mx_test(void *self, const exchange_request *rq) {
    mx_exchange *x = self;
    mx_request *q = (mx_request *)rq;
    if (q->done) return 1;
    int flag = 0;
    int rc = check_mpi(x->mpi->test(&q->req, &flag, MPI_API_STATUS_IGNORE), "MPI_Test");
    if (rc != SS_OK || flag) request_complete(x, q, rc);
    return q->done;
}

static int mx_wait(void *self, exchange_request *rq, exchange_result *r) {
    mx_exchange *x = self;
    mx_request *q = (mx_request *)rq;
    if (!q->done)
        request_complete(x, q, check_mpi(x->mpi->wait(&q->req, MPI_API_STATUS_IGNORE), "MPI_Wait"));
    int rc = q->status;
    if (r) *r = q->res;
    free(q->scratch);
    free(q);
    return rc;
}

static int mx_allgather(void *self, exchange_group *eg, int member, const void *mine, void *all,
                        size_t count, double bytes, exchange_result *r) {
    mx_exchange *x = self;
    double t0 = mx_now(x);
    int rc = check_call(x, eg, member, count, bytes, "allgather");
    const mx_group *g = (const mx_group *)eg;
    int m = rc == SS_OK ? group_size(x, g) : 0;
    if (rc == SS_OK) {
        size_t c = count;
        if (!mine || !all) { /* scratch: max(count, 1) bytes each, floats rounded up */
            c = count ? count : 1;
            float *s = grow(&x->scratch, &x->scratch_n, ((size_t)m + 1) * c / sizeof(float) + 1);
            mine = s;
            all = (char *)s + c;
        }
        rc = check_mpi(x->mpi->allgather(mine, (int)c, x->mpi->type_byte, all, (int)c,
                                         x->mpi->type_byte, g->comm),
                       "MPI_Allgather");
    }
    double v = rc == SS_OK ? bruck_bytes(bytes, m) : 0;
    result_set(r, t0, mx_now(x), v, v);
    return rc;
}

static int mx_broadcast(void *self, exchange_group *eg, int member, int root, float *buf,
                        size_t count, double bytes, exchange_result *r) {
    mx_exchange *x = self;
    double t0 = mx_now(x);
    int rc = check_call(x, eg, member, count, bytes, "broadcast");
    const mx_group *g = (const mx_group *)eg;
    int m = rc == SS_OK ? group_size(x, g) : 0;
    if (rc == SS_OK && (root < 0 || root >= m))
        rc = ss_error_set(SS_EUSAGE, "broadcast: root %d out of range (group of %d)", root, m);
    if (rc == SS_OK) {
        float *b = buf ? buf : grow(&x->scratch, &x->scratch_n, count);
        rc =
            check_mpi(x->mpi->bcast(b, (int)count, x->mpi->type_float, root, g->comm), "MPI_Bcast");
    }
    double sent = 0, recv = 0;
    if (rc == SS_OK) {
        int rel = (member - root + m) % m;
        sent = binomial_children(rel, m) * wire_bytes(bytes);
        recv = rel ? wire_bytes(bytes) : 0;
    }
    result_set(r, t0, mx_now(x), sent, recv);
    return rc;
}

/* ---------------------------------------------------------------- point to point */

static int mx_send(void *self, exchange_group *eg, int member, int dst, const float *buf,
                   size_t count, double bytes, exchange_result *r) {
    mx_exchange *x = self;
    double t0 = mx_now(x);
    int rc = check_call(x, eg, member, count, bytes, "send");
    if (rc == SS_OK) rc = check_peer(x, eg, member, dst, "send");
    if (rc == SS_OK) {
        const float *b = buf ? buf : grow(&x->scratch, &x->scratch_n, count);
        rc = check_mpi(
            x->mpi->send(b, (int)count, x->mpi->type_float, dst, TAG_P2P, ((mx_group *)eg)->comm),
            "MPI_Send");
    }
    result_set(r, t0, mx_now(x), rc == SS_OK ? wire_bytes(bytes) : 0, 0);
    return rc;
}

static int mx_recv(void *self, exchange_group *eg, int member, int src, float *buf, size_t count,
                   double bytes, exchange_result *r) {
    mx_exchange *x = self;
    double t0 = mx_now(x);
    int rc = check_call(x, eg, member, count, bytes, "recv");
    if (rc == SS_OK) rc = check_peer(x, eg, member, src, "recv");
    if (rc == SS_OK) {
        float *b = buf ? buf : grow(&x->scratch, &x->scratch_n, count);
        rc = check_mpi(x->mpi->recv(b, (int)count, x->mpi->type_float, src, TAG_P2P,
                                    ((mx_group *)eg)->comm, MPI_API_STATUS_IGNORE),
                       "MPI_Recv");
    }
    result_set(r, t0, mx_now(x), 0, rc == SS_OK ? wire_bytes(bytes) : 0);
    return rc;
}

/* send_start (is_send) or recv_start: one MPI_Isend / MPI_Irecv on the non-blocking tag. */
static exchange_request *p2p_start(mx_exchange *x, exchange_group *eg, int member, int peer,
                                   float *buf, size_t count, double bytes, int is_send) {
    const char *what = is_send ? "send_start" : "recv_start";
    mx_request *q = request_new(x);
    int rc = check_call(x, eg, member, count, bytes, what);
    if (rc == SS_OK) rc = check_peer(x, eg, member, peer, what);
    if (rc != SS_OK) return (exchange_request *)request_failed(q, rc);
    float *b = buf;
    if (!b) b = q->scratch = ss_calloc(count ? count : 1, sizeof(float));
    void *comm = ((mx_group *)eg)->comm;
    if (is_send)
        rc = check_mpi(
            x->mpi->isend(b, (int)count, x->mpi->type_float, peer, TAG_P2P_NB, comm, &q->req),
            "MPI_Isend");
    else
        rc = check_mpi(
            x->mpi->irecv(b, (int)count, x->mpi->type_float, peer, TAG_P2P_NB, comm, &q->req),
            "MPI_Irecv");
    if (rc != SS_OK) return (exchange_request *)request_failed(q, rc);
    if (is_send)
        q->res.bytes_sent = wire_bytes(bytes);
    else
        q->res.bytes_recv = wire_bytes(bytes);
    return (exchange_request *)q;
}

static exchange_request *mx_send_start(void *self, exchange_group *eg, int member, int dst,
                                       const float *buf, size_t count, double bytes) {
    /* MPI_Isend only reads the buffer */
    return p2p_start(self, eg, member, dst, (float *)buf, count, bytes, 1);
}

static exchange_request *mx_recv_start(void *self, exchange_group *eg, int member, int src,
                                       float *buf, size_t count, double bytes) {
    return p2p_start(self, eg, member, src, buf, count, bytes, 0);
}

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

static int mx_ps_push(void *self, int worker, const float *buf, size_t count, double bytes,
                      int64_t round, exchange_result *r) {
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

static int mx_ps_pull(void *self, int worker, float *buf, size_t count, double bytes, int64_t round,
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

static int mx_ps_push_pull(void *self, int worker, float *buf, size_t count, double bytes,
                           int64_t round, exchange_result *r) {
    exchange_result a = {0}, b = {0};
    int rc = mx_ps_push(self, worker, buf, count, bytes, round, &a);
    if (rc == SS_OK) rc = mx_ps_pull(self, worker, buf, count, bytes, round, &b);
    if (rc != SS_OK) b.end_s = a.end_s;
    result_set(r, a.start_s, rc == SS_OK ? b.end_s : a.end_s, a.bytes_sent + b.bytes_sent,
               a.bytes_recv + b.bytes_recv);
    return rc;
}

static int mx_ps_start(void *self, const exchange_ps_opts *o) {
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

static long mx_clock_wait(void *self, int worker, long staleness) {
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

static void mx_clock_advance(void *self, int worker, long clock, long *rounds) {
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

/* ---------------------------------------------------------------- the runner's side channel */

int exchange_mpi_barrier(exchange *ex) {
    mx_exchange *x = ex->self;
    return check_mpi(x->mpi->barrier(x->world), "MPI_Barrier");
}

int exchange_mpi_gather_bytes(exchange *ex, const void *mine, size_t n, void **all,
                              size_t *counts) {
    mx_exchange *x = ex->self;
    const mpi_api *mpi = x->mpi;
    *all = NULL;
    if (n > (size_t)INT32_MAX)
        return ss_error_set(SS_EUSAGE, "gather_bytes: %zu bytes (at most %d)", n, INT32_MAX);
    int size = x->n_workers + x->n_servers, mine_n = (int)n;
    int *cnt = x->rank == 0 ? ss_calloc((size_t)size, sizeof(int)) : NULL;
    int *displ = x->rank == 0 ? ss_calloc((size_t)size, sizeof(int)) : NULL;
    int rc = check_mpi(mpi->gather(&mine_n, 1, mpi->type_int, cnt, 1, mpi->type_int, 0, x->world),
                       "MPI_Gather");
    size_t total = 0;
    for (int i = 0; x->rank == 0 && i < size; i++) {
        displ[i] = (int)total;
        total += (size_t)cnt[i];
        if (counts) counts[i] = (size_t)cnt[i];
    }
    if (rc == SS_OK && total > (size_t)INT32_MAX)
        rc = ss_error_set(SS_EUSAGE, "gather_bytes: %zu bytes in all (at most %d)", total,
                          INT32_MAX);
    char *buf = x->rank == 0 ? ss_malloc(total ? total : 1) : NULL;
    static const char none = 0;
    if (rc == SS_OK)
        rc = check_mpi(mpi->gatherv(n ? mine : &none, mine_n, mpi->type_byte, buf, cnt, displ,
                                    mpi->type_byte, 0, x->world),
                       "MPI_Gatherv");
    free(cnt);
    free(displ);
    if (rc == SS_OK)
        *all = buf;
    else
        free(buf);
    return rc;
}

int exchange_mpi_allreduce_doubles(exchange *ex, double *v, int n, int op_max) {
    mx_exchange *x = ex->self;
    if (n < 0) return ss_error_set(SS_EUSAGE, "allreduce_doubles: %d values", n);
    return check_mpi(x->mpi->allreduce(MPI_API_IN_PLACE, v, n, x->mpi->type_double,
                                       op_max ? x->mpi->op_max : x->mpi->op_sum, x->world),
                     "MPI_Allreduce");
}

int exchange_mpi_rank(const exchange *ex) {
    return ((const mx_exchange *)ex->self)->rank;
}

int exchange_mpi_is_server(const exchange *ex) {
    const mx_exchange *x = ex->self;
    return x->rank >= x->n_workers;
}

/* ---------------------------------------------------------------- open / close */

static const exchange_ops mx_ops = {.name = "mpi",
                                    .simulated = 0,
                                    .now = mx_now,
                                    .group = mx_group_of,
                                    .allreduce = mx_allreduce,
                                    .allreduce_start = mx_allreduce_start,
                                    .test = mx_test,
                                    .wait = mx_wait,
                                    .allgather = mx_allgather,
                                    .broadcast = mx_broadcast,
                                    .send = mx_send,
                                    .recv = mx_recv,
                                    .send_start = mx_send_start,
                                    .recv_start = mx_recv_start,
                                    .ps_start = mx_ps_start,
                                    .ps_push = mx_ps_push,
                                    .ps_pull = mx_ps_pull,
                                    .ps_push_pull = mx_ps_push_pull,
                                    .clock_wait = mx_clock_wait,
                                    .clock_advance = mx_clock_advance};

/* MPI loaded and started, the world of the right size; *rank set. */
static int open_world(const exchange_mpi_opts *o, const mpi_api **mpi, int *rank) {
    if (o->n_workers < 1 || o->n_servers < 0)
        return ss_error_set(SS_EUSAGE, "exchange mpi: %d workers and %d servers (need >= 1, >= 0)",
                            o->n_workers, o->n_servers);
    if (!mpi_api_compiled()) return mpi_api_load(mpi); /* says: built without OpenMPI */
    if (!mpi_api_under_launcher())
        return ss_error_set(SS_EUSAGE,
                            "the MPI exchange runs on ranks started by mpirun: run `mpirun -np %d "
                            "syncsim ...` (%d workers + %d servers), not syncsim alone",
                            o->n_workers + o->n_servers, o->n_workers, o->n_servers);
    int rc = mpi_api_init(mpi);
    if (rc != SS_OK) return rc;
    int size = 0;
    rc = check_mpi((*mpi)->comm_rank((*mpi)->comm_world, rank), "MPI_Comm_rank");
    if (rc == SS_OK) rc = check_mpi((*mpi)->comm_size((*mpi)->comm_world, &size), "MPI_Comm_size");
    if (rc == SS_OK && size != o->n_workers + o->n_servers)
        rc = ss_error_set(SS_EUSAGE,
                          "mpirun -np %d started %d ranks; --workers %d with %d servers needs %d",
                          size, size, o->n_workers, o->n_servers, o->n_workers + o->n_servers);
    return rc;
}

static int open_comms(mx_exchange *x) {
    const mpi_api *mpi = x->mpi;
    int server = x->rank >= x->n_workers;
    void *split = NULL;
    int rc = check_mpi(mpi->comm_dup(mpi->comm_world, &x->world), "MPI_Comm_dup");
    if (rc == SS_OK)
        rc = check_mpi(mpi->comm_split(mpi->comm_world, server, x->rank, &split), "MPI_Comm_split");
    if (rc == SS_OK) rc = check_mpi(mpi->comm_dup(mpi->comm_world, &x->ps_ctl), "MPI_Comm_dup");
    if (rc == SS_OK) rc = check_mpi(mpi->comm_dup(mpi->comm_world, &x->ps_data), "MPI_Comm_dup");
    if (server)
        x->servers = split;
    else
        x->workers = split;
    if (rc == SS_OK && !server)
        rc = check_mpi(mpi->comm_dup(x->workers, &x->votes), "MPI_Comm_dup");
    return rc;
}

int exchange_mpi_stop_vote(exchange *ex, int mine, int *any) {
    mx_exchange *x = ex->self;
    *any = 0;
    if (!x->votes) return ss_error_set(SS_EUSAGE, "stop vote on a server rank");
    int rc = SS_OK;
    if (x->vote_rq) {
        rc = check_mpi(x->mpi->wait(&x->vote_rq, MPI_API_STATUS_IGNORE), "MPI_Wait");
        x->vote_rq = NULL;
        if (rc != SS_OK) return rc;
        *any = x->vote_any;
    }
    x->vote_mine = mine != 0;
    return check_mpi(x->mpi->iallreduce(&x->vote_mine, &x->vote_any, 1, x->mpi->type_int,
                                        x->mpi->op_max, x->votes, &x->vote_rq),
                     "MPI_Iallreduce");
}

int exchange_mpi_open(const exchange_mpi_opts *o, exchange **out) {
    *out = NULL;
    const mpi_api *mpi = NULL;
    int rank = 0;
    int rc = open_world(o, &mpi, &rank);
    if (rc != SS_OK) return rc;
    mx_exchange *x = ss_calloc(1, sizeof *x);
    x->ex.ops = &mx_ops;
    x->ex.self = x;
    x->mpi = mpi;
    x->rank = rank;
    x->n_workers = o->n_workers;
    x->n_servers = o->n_servers;
    rc = open_comms(x);
    if (rc == SS_OK) rc = check_mpi(mpi->barrier(x->world), "MPI_Barrier");
    if (rc != SS_OK) {
        exchange_mpi_close(&x->ex);
        return rc;
    }
    x->t0_s = mono_s();
    x->all = ss_calloc(1, sizeof *x->all);
    x->all->comm = x->workers;
    *out = &x->ex;
    return SS_OK;
}

static void comm_free(const mpi_api *mpi, void **comm) {
    if (*comm && *comm != mpi->comm_null) mpi->comm_free(comm);
    *comm = NULL;
}

void exchange_mpi_close(exchange *ex) {
    if (!ex) return;
    mx_exchange *x = ex->self;
    while (x->groups) {
        mx_group *g = x->groups;
        x->groups = g->next;
        comm_free(x->mpi, &g->comm);
        free(g->members);
        free(g);
    }
    free(x->all);
    if (x->vote_rq)
        x->mpi->wait(&x->vote_rq, MPI_API_STATUS_IGNORE); /* every worker posted as many votes */
    comm_free(x->mpi, &x->votes);
    comm_free(x->mpi, &x->workers);
    comm_free(x->mpi, &x->servers);
    comm_free(x->mpi, &x->ps_ctl);
    comm_free(x->mpi, &x->ps_data);
    comm_free(x->mpi, &x->world);
    free(x->scratch);
    free(x->shard_scratch);
    free(x);
}
