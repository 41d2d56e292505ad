/* The policy runner: checks the configuration, sets up the state the worker actors share and the
 * exchange they talk through (the SimGrid backend, over the cluster), starts one actor per worker
 * on its protocol, runs the simulation and sums up the results. In real mode (policy_run_real)
 * the same protocol runs once, for this process's rank, over a given exchange. */
#include "common/status.h"
#include "sim/exchange/exchange_simgrid.h"
#include "sim/policy/policy_internal.h"
#include "sim/policy/policy_registry.h"
#include "sim/policy/policy_workers.h"

#include <stdlib.h>
#include <string.h>

static int check_policy(const policy_config *pc) {
    if (pc->workers < 1 || pc->steps < 1 || pc->batch < 1)
        return ss_error_set(SS_EUSAGE, "policy: workers, steps and batch must be positive");
    if (pc->use_ps &&
        ((pc->kind == POLICY_FEDAVG && pc->client_fraction < 1) || pc->kind == POLICY_DSSYNC))
        return ss_error_set(SS_EUSAGE, "--collective ps serves all workers at once: it does not "
                                       "apply to dssync groups or to fedavg with "
                                       "--client-fraction below 1");
    if (pc->loss_tolerance < 0 || pc->loss_tolerance >= 1 || pc->chunk_bytes < 4)
        return ss_error_set(SS_EUSAGE, "loss tolerance must be in [0, 1) and chunks at least 4 "
                                       "bytes");
    if (pc->kind == POLICY_FEDAVG &&
        (pc->local_steps < 1 || pc->client_fraction <= 0 || pc->client_fraction > 1))
        return ss_error_set(SS_EUSAGE, "fedavg: local steps must be >= 1 and the client fraction "
                                       "in (0, 1]");
    return SS_OK;
}

static int check_config(const policy_config *pc, const sim_cluster *c) {
    int rc = check_policy(pc);
    if (rc != SS_OK) return rc;
    if (sim_cluster_n_workers(c) != pc->workers)
        return ss_error_set(SS_EUSAGE, "policy: the cluster maps %d workers, the policy wants %d",
                            sim_cluster_n_workers(c), pc->workers);
    int needs_ps = pc->use_ps || policy_is_async(pc);
    if (needs_ps && sim_cluster_n_ps(c) < pc->ps_servers)
        return ss_error_set(SS_EUSAGE,
                            "policy %s needs %d parameter server host(s); the cluster "
                            "maps %d",
                            policy_kind_name(pc->kind), pc->ps_servers, sim_cluster_n_ps(c));
    return SS_OK;
}

static void state_init(policy_state *st, const policy_config *pc, step_source *src,
                       policy_record_fn record, void *record_ctx, policy_result *res) {
    const int n = pc->workers;
    memset(st, 0, sizeof *st);
    st->pc = pc;
    st->src = src;
    st->record = record;
    st->record_ctx = record_ctx;
    st->res = res;
    st->slots = ss_malloc(sizeof(sync_slot) * (size_t)(n + 1) * SYNC_SLOTS);
    for (int i = 0; i < (n + 1) * SYNC_SLOTS; i++)
        st->slots[i].id = -1;
    st->agg_seq = ss_calloc((size_t)n, sizeof(long));
    st->compute_s = ss_calloc((size_t)n, sizeof(double));
    st->comm_s = ss_calloc((size_t)n, sizeof(double));
    st->wait_s = ss_calloc((size_t)n, sizeof(double));
    st->pulled_version = ss_calloc((size_t)n, sizeof(long));
    st->straggler = ss_calloc((size_t)n, sizeof(rng));
    for (int w = 0; w < n; w++)
        rng_seed(&st->straggler[w], pc->seed, RNG_STREAM_NETWORK + (uint64_t)w);
}

static void state_free(policy_state *st) {
    policy_dlcp_free(st);
    free(st->straggler);
    free(st->slots);
    free(st->agg_seq);
    free(st->compute_s);
    free(st->comm_s);
    free(st->wait_s);
    free(st->pulled_version);
}

/* The world group, and the parameter servers when the policy uses them. */
static int start_exchange(policy_state *st) {
    const policy_config *pc = st->pc;
    st->world = st->ex->ops->group(st->ex->self, NULL, pc->workers);
    const int async = policy_is_async(pc);
    if (!async && !pc->use_ps) return SS_OK;
    exchange_ps_opts po = {.n_servers = pc->ps_servers, .async = async};
    if (async) policy_ssp_hooks(&po.hooks, st);
    st->has_ps = 1;
    return st->ex->ops->ps_start(st->ex->self, &po);
}

/* The exchange over the cluster (the simulation). */
static int open_exchange(policy_state *st, sim_cluster *cluster) {
    const policy_config *pc = st->pc;
    exchange_simgrid_opts xo = {.coll = pc->coll,
                                .background_load = pc->background_load,
                                .seed = pc->seed,
                                .ps_wire_jitter = pc->comm_jitter};
    int rc = exchange_simgrid_open(cluster, &xo, &st->ex);
    return rc == SS_OK ? start_exchange(st) : rc;
}

static void collect(const policy_state *st, double end_s, policy_result *res) {
    const int n = st->pc->workers;
    res->sim_time_s = end_s;
    res->steps = st->pc->steps;
    res->sync_steps = st->counters.sync_steps;
    res->lssr = 1.0 - (double)res->sync_steps / (double)res->steps;
    res->bytes_sent = st->counters.bytes_sent;
    for (int w = 0; w < n; w++) {
        res->compute_s += st->compute_s[w] / n;
        res->comm_s += st->comm_s[w] / n;
        res->wait_s += st->wait_s[w] / n;
    }
}

int policy_run(const policy_config *pc, sim_cluster *cluster, step_source *src,
               policy_record_fn record, void *record_ctx, policy_result *res) {
    int rc = check_config(pc, cluster);
    if (rc != SS_OK) return rc;
    const int n = pc->workers;
    memset(res, 0, sizeof *res);
    policy_state st;
    state_init(&st, pc, src, record, record_ctx, res);
    src->counters = &st.counters;
    rc = open_exchange(&st, cluster);
    if (rc == SS_OK) {
        void (*worker)(void *) = policy_registry_of_kind(pc->kind)->worker;
        SS_ASSERT(worker != NULL);
        worker_arg *args = ss_calloc((size_t)n, sizeof *args);
        for (int w = 0; w < n; w++) {
            args[w].st = &st;
            args[w].rank = w;
            sim_actor_spawn("worker", w, sim_cluster_worker_host(cluster, w), worker, &args[w]);
        }
        double end_s = 0;
        rc = sim_cluster_run(cluster, &end_s);
        free(args);
        if (rc == SS_OK) collect(&st, end_s, res);
    }
    exchange_simgrid_close(st.ex);
    state_free(&st);
    src->counters = NULL;
    return rc;
}

static int check_real(const policy_config *pc, const step_source *src) {
    int rc = check_policy(pc);
    if (rc != SS_OK) return rc;
    if (pc->loss_tolerance > 0)
        return ss_error_set(SS_EUSAGE, "real mode: DLCP's bounded-loss exchanges (--loss-tolerance "
                                       "above 0) drop chunks inside one collective, which MPI "
                                       "cannot; use 0");
    if (!src->ops->buffer)
        return ss_error_set(SS_EUSAGE,
                            "real mode needs a step source with real tensors (%s has "
                            "none)",
                            src->ops->name);
    return SS_OK;
}

int policy_run_real(const policy_config *pc, exchange *ex, int rank, step_source *src,
                    int (*serve)(exchange *ex), int (*done)(exchange *ex, int worker),
                    policy_record_fn record, void *record_ctx, policy_result *res) {
    int rc = check_real(pc, src);
    if (rc != SS_OK) return rc;
    memset(res, 0, sizeof *res);
    policy_state st;
    state_init(&st, pc, src, record, record_ctx, res);
    src->counters = &st.counters;
    st.ex = ex;
    rc = start_exchange(&st);
    if (rc == SS_OK && rank >= pc->workers) {
        rc = serve ? serve(ex)
                   : ss_error_set(SS_EUSAGE,
                                  "real mode: rank %d is not a worker and "
                                  "the exchange has no server loop",
                                  rank);
    } else if (rc == SS_OK) {
        worker_arg arg = {.st = &st, .rank = rank};
        policy_registry_of_kind(pc->kind)->worker(&arg);
        if (done) rc = done(ex, rank);
    }
    if (rc == SS_OK) {
        res->sim_time_s = ex->ops->now(ex->self);
        res->steps = src->stop_after > 0 ? src->stop_after : pc->steps; /* interrupted: fewer */
        res->sync_steps = st.counters.sync_steps;
        res->bytes_sent = st.counters.bytes_sent;
        if (rank < pc->workers) {
            res->compute_s = st.compute_s[rank];
            res->comm_s = st.comm_s[rank];
            res->wait_s = st.wait_s[rank];
        }
    }
    state_free(&st);
    src->counters = NULL;
    return rc;
}
