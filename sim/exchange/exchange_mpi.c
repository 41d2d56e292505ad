/* The exchange over MPI (see exchange_mpi.h). Every call goes through common/mpi_api.h.
 *
 * Communicators: `world` (a duplicate of MPI_COMM_WORLD) carries the runner's side channel;
 * `workers` (MPI_Comm_split of the workers, rank = worker index) is the group of all workers and
 * the parent of every other group (MPI_Comm_create_group, collective over its members only);
 * `ps_ctl` and `ps_data` (duplicates of the world) carry the parameter servers' protocol.
 */
#include "sim/exchange/exchange_mpi_internal.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

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

/* ---------------------------------------------------------------- the workers, their compute */

static int mx_run_workers(void *self, int workers, void (*worker)(void *ctx, int w), void *ctx,
                          exchange_hosted *out) {
    mx_exchange *x = self;
    memset(out, 0, sizeof *out);
    if (workers != x->n_workers)
        return ss_error_set(SS_EUSAGE,
                            "policy: the exchange has %d worker ranks, the policy wants %d",
                            x->n_workers, workers);
    int rc;
    if (x->rank >= x->n_workers) {
        rc = exchange_mpi_serve(&x->ex);
    } else {
        worker(ctx, x->rank);
        rc = exchange_mpi_worker_done(&x->ex, x->rank);
        out->first_worker = x->rank;
        out->n_here = 1;
    }
    out->end_s = mx_now(x);
    return rc;
}

/* Sleeps s seconds of real time, resuming after signals. */
static void sleep_s(double s) {
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - floor(s)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* The computation took its real time: a slowed worker (--slowdown, --straggler-*) really waits
 * the extra. */
static int mx_compute(void *self, int worker, const sim_compute_cfg *cfg, const sim_step_cost *cost,
                      double start_s) {
    (void)worker;
    (void)cfg;
    if (cost->slowdown > 1) sleep_s((cost->slowdown - 1) * (mx_now(self) - start_s));
    return SS_OK;
}

static int mx_layer_times(void *self, int worker, const sim_compute_cfg *cfg,
                          const sim_layer_cost *layers, int n, double *fwd_s, double *bwd_s,
                          double *optimizer_s) {
    (void)self, (void)worker, (void)cfg, (void)layers, (void)n;
    (void)fwd_s, (void)bwd_s, (void)optimizer_s;
    return ss_error_set(SS_EUSAGE, "real mode: a step's layers take their real time; there is "
                                   "no modelled host to time them on");
}

static const exchange_ops mx_ops = {.name = "mpi",
                                    .now = mx_now,
                                    .run_workers = mx_run_workers,
                                    .compute = mx_compute,
                                    .layer_times = mx_layer_times,
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

/* ---------------------------------------------------------------- open / close */

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
    pthread_mutex_init(&x->lock, NULL);
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
    mx_progress_stop(x);
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
    pthread_mutex_destroy(&x->lock);
    free(x);
}
