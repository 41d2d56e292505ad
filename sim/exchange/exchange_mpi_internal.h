/* Internal to the MPI exchange (exchange_mpi.c: open, close, run, the runner's side channel;
 * exchange_mpi_coll.c: groups, collectives, point to point; exchange_mpi_ps.c: the parameter
 * servers' protocol, both sides): its state and the helpers they share. */
#ifndef SS_SIM_EXCHANGE_MPI_INTERNAL_H
#define SS_SIM_EXCHANGE_MPI_INTERNAL_H

#include "common/mpi_api.h"
#include "common/status.h"
#include "sim/exchange/exchange_mpi.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
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
    /* the progress thread (MPI_THREAD_MULTIPLE only): it tests the non-blocking all-reduces in
     * flight while the worker computes, since MPI moves their data only inside its calls */
    struct mx_request *flight; /* all-reduces in flight, newest first */
    pthread_mutex_t lock;      /* flight and the MPI calls on its requests, between threads */
    pthread_t progress;
    int progress_running;
    atomic_int progress_stop;
} mx_exchange;

static inline double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline double mx_now(void *self) {
    const mx_exchange *x = self;
    return mono_s() - x->t0_s;
}

static inline float *grow(float **p, size_t *cap, size_t n) {
    if (n > *cap) {
        free(*p);
        *p = ss_calloc(n, sizeof(float));
        *cap = n;
    }
    return *p;
}

static inline int check_mpi(int code, const char *what) {
    return mpi_api_check(code, what);
}

/* ---------------------------------------------------------------- nominal volumes */

/* Whole bytes, never below one, as the simulated collectives send. */
static inline double wire_bytes(double bytes) {
    long b = lround(bytes);
    return (double)(b < 1 ? 1 : b);
}

/* The ring all-reduce: 2 (m - 1) chunks of bytes / m each way. */
static inline double ring_bytes(double bytes, int m) {
    return m < 2 ? 0 : 2.0 * (m - 1) * wire_bytes(bytes / m);
}

/* Bruck's all-gather: step d (1, 2, 4, ...) sends and receives min(d, m - d) parts. */
static inline double bruck_bytes(double part_bytes, int m) {
    double total = 0;
    for (int d = 1; d < m; d *= 2)
        total += wire_bytes((d < m - d ? d : m - d) * part_bytes);
    return total;
}

/* The binomial broadcast: one message per child of `rel` (relative rank). */
static inline int binomial_children(int rel, int m) {
    int mask = 1, n = 0;
    while (mask < m && !(rel & mask))
        mask <<= 1;
    for (mask >>= 1; mask > 0; mask >>= 1)
        n += rel + mask < m;
    return n;
}

static inline void result_set(exchange_result *r, double start_s, double end_s, double sent,
                              double recv) {
    if (!r) return;
    r->start_s = start_s;
    r->end_s = end_s;
    r->bytes_sent = sent;
    r->bytes_recv = recv;
}

/* ---------------------------------------------------------------- the operations */

/* exchange_mpi_coll.c */
exchange_group *mx_group_of(void *self, const int *members, int m);
int mx_allreduce(void *self, exchange_group *eg, int member, float *buf, size_t count, double bytes,
                 exchange_result *r);
exchange_request *mx_allreduce_start(void *self, exchange_group *eg, int member, float *buf,
                                     size_t count, double bytes);
int mx_test(void *self, const exchange_request *rq);
int mx_wait(void *self, exchange_request *rq, exchange_result *r);
int mx_allgather(void *self, exchange_group *eg, int member, const void *mine, void *all,
                 size_t count, double bytes, exchange_result *r);
int mx_broadcast(void *self, exchange_group *eg, int member, int root, float *buf, size_t count,
                 double bytes, exchange_result *r);
int mx_send(void *self, exchange_group *eg, int member, int dst, const float *buf, size_t count,
            double bytes, exchange_result *r);
int mx_recv(void *self, exchange_group *eg, int member, int src, float *buf, size_t count,
            double bytes, exchange_result *r);
exchange_request *mx_send_start(void *self, exchange_group *eg, int member, int dst,
                                const float *buf, size_t count, double bytes);
exchange_request *mx_recv_start(void *self, exchange_group *eg, int member, int src, float *buf,
                                size_t count, double bytes);
void mx_progress_stop(mx_exchange *x);

/* exchange_mpi_ps.c */
int mx_ps_start(void *self, const exchange_ps_opts *o);
int mx_ps_push(void *self, int worker, const float *buf, size_t count, double bytes, int64_t round,
               exchange_result *r);
int mx_ps_pull(void *self, int worker, float *buf, size_t count, double bytes, int64_t round,
               exchange_result *r);
int mx_ps_push_pull(void *self, int worker, float *buf, size_t count, double bytes, int64_t round,
                    exchange_result *r);
long mx_clock_wait(void *self, int worker, long staleness);
void mx_clock_advance(void *self, int worker, long clock, long *rounds);

#endif
