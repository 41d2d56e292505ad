/* The MPI exchange's groups, collectives and point-to-point messages, and the thread that
 * progresses the non-blocking all-reduces (see exchange_mpi.h). */
#include "sim/exchange/exchange_mpi_internal.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

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

exchange_group *mx_group_of(void *self, const int *members, int m) {
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

/* ---------------------------------------------------------------- collectives */

int mx_allreduce(void *self, exchange_group *eg, int member, float *buf, size_t count, double bytes,
                 exchange_result *r) {
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
    struct mx_request *next; /* in x->flight */
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

/* ---- progress: a thread tests the all-reduces in flight every PROGRESS_US ----
 *
 * As Horovod's background thread drives MPI: the buckets of an overlapped step start during the
 * backward pass, and without calls into MPI their data would not move until the wait. Only under
 * MPI_THREAD_MULTIPLE (syncsim real asks for it with --overlap on); otherwise the requests
 * progress in test and wait alone. */
#define PROGRESS_US 50

static void flight_remove(mx_exchange *x, mx_request *q) {
    for (mx_request **p = &x->flight; *p; p = &(*p)->next)
        if (*p == q) {
            *p = q->next;
            return;
        }
}

static void request_complete(mx_exchange *x, mx_request *q, int status) {
    q->done = 1;
    q->status = status;
    q->res.end_s = mx_now(x);
    if (q->g) {
        q->g->in_flight--;
        flight_remove(x, q);
    }
    q->g = NULL;
}

static int request_test(mx_exchange *x, mx_request *q) {
    if (q->done) return 1;
    int flag = 0;
    int rc = check_mpi(x->mpi->test(&q->req, &flag, MPI_API_STATUS_IGNORE), "MPI_Test");
    if (rc != SS_OK || flag) request_complete(x, q, rc);
    return q->done;
}

static void *progress_main(void *arg) {
    mx_exchange *x = arg;
    const struct timespec pause = {0, PROGRESS_US * 1000L};
    while (!atomic_load(&x->progress_stop)) {
        pthread_mutex_lock(&x->lock);
        for (mx_request *q = x->flight, *next; q; q = next) {
            next = q->next;
            request_test(x, q);
        }
        pthread_mutex_unlock(&x->lock);
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static void progress_start(mx_exchange *x) {
    if (x->progress_running || mpi_api_thread_level() < MPI_API_THREAD_MULTIPLE) return;
    atomic_store(&x->progress_stop, 0);
    x->progress_running = pthread_create(&x->progress, NULL, progress_main, x) == 0;
}

/* Once nothing is in flight (called without the lock). */
void mx_progress_stop(mx_exchange *x) {
    if (!x->progress_running) return;
    atomic_store(&x->progress_stop, 1);
    pthread_join(x->progress, NULL);
    x->progress_running = 0;
}

exchange_request *mx_allreduce_start(void *self, exchange_group *eg, int member, float *buf,
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
    pthread_mutex_lock(&x->lock);
    rc = check_mpi(x->mpi->iallreduce(MPI_API_IN_PLACE, b, (int)count, x->mpi->type_float,
                                      x->mpi->op_sum, g->comm, &q->req),
                   "MPI_Iallreduce");
    if (rc == SS_OK) {
        q->g = g;
        g->in_flight++;
        q->next = x->flight;
        x->flight = q;
    }
    pthread_mutex_unlock(&x->lock);
    if (rc != SS_OK) return (exchange_request *)request_failed(q, rc);
    progress_start(x);
    q->res.bytes_sent = q->res.bytes_recv = ring_bytes(bytes, group_size(x, g));
    return (exchange_request *)q;
}

/* test() completes the MPI request when it has finished, hence the cast (as the simulation
 * backend's test releases its comm). */
int mx_test(void *self, const exchange_request *rq) {
    mx_exchange *x = self;
    pthread_mutex_lock(&x->lock);
    int done = request_test(x, (mx_request *)rq);
    pthread_mutex_unlock(&x->lock);
    return done;
}

int mx_wait(void *self, exchange_request *rq, exchange_result *r) {
    mx_exchange *x = self;
    mx_request *q = (mx_request *)rq;
    pthread_mutex_lock(&x->lock);
    if (!q->done)
        request_complete(x, q, check_mpi(x->mpi->wait(&q->req, MPI_API_STATUS_IGNORE), "MPI_Wait"));
    const int idle = x->flight == NULL;
    pthread_mutex_unlock(&x->lock);
    if (idle) mx_progress_stop(x);
    int rc = q->status;
    if (r) *r = q->res;
    free(q->scratch);
    free(q);
    return rc;
}

int mx_allgather(void *self, exchange_group *eg, int member, const void *mine, void *all,
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

int mx_broadcast(void *self, exchange_group *eg, int member, int root, float *buf, size_t count,
                 double bytes, exchange_result *r) {
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

int mx_send(void *self, exchange_group *eg, int member, int dst, const float *buf, size_t count,
            double bytes, exchange_result *r) {
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

int mx_recv(void *self, exchange_group *eg, int member, int src, float *buf, size_t count,
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

exchange_request *mx_send_start(void *self, exchange_group *eg, int member, int dst,
                                const float *buf, size_t count, double bytes) {
    /* MPI_Isend only reads the buffer */
    return p2p_start(self, eg, member, dst, (float *)buf, count, bytes, 1);
}

exchange_request *mx_recv_start(void *self, exchange_group *eg, int member, int src, float *buf,
                                size_t count, double bytes) {
    return p2p_start(self, eg, member, src, buf, count, bytes, 0);
}
