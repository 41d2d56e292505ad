/* The policy runner: checks the configuration, sets up the state the workers share, starts the
 * parameter servers when the policy uses them, has the exchange run one protocol per worker it
 * hosts (the simulation: every worker, one actor each; MPI: this rank's) and sums up the
 * results. */
#include "common/status.h"
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

/* Sums up the run: means over the workers hosted here (a real rank: its own worker). */
static void collect(const policy_state *st, const exchange_hosted *ran, policy_result *res) {
    res->sim_time_s = ran->end_s;
    res->steps = st->src->stop_after > 0 ? st->src->stop_after : st->pc->steps;
    res->sync_steps = st->counters.sync_steps;
    res->lssr = 1.0 - (double)res->sync_steps / (double)res->steps;
    res->bytes_sent = st->counters.bytes_sent;
    const int n = ran->n_here;
    for (int w = ran->first_worker; w < ran->first_worker + n; w++) {
        res->compute_s += st->compute_s[w] / n;
        res->comm_s += st->comm_s[w] / n;
        res->wait_s += st->wait_s[w] / n;
    }
}

/* A source whose vectors the exchange moves (real mode) cannot lose part of them in one
 * collective, as DLCP's bounded-loss exchanges do. */
static int check_source(const policy_config *pc, const step_source *src) {
    if (src->ops->buffer && pc->loss_tolerance > 0)
        return ss_error_set(SS_EUSAGE, "real mode: DLCP's bounded-loss exchanges (--loss-tolerance "
                                       "above 0) drop chunks inside one collective, which MPI "
                                       "cannot; use 0");
    return SS_OK;
}

static void run_worker(void *ctx, int w) {
    worker_arg arg = {.st = ctx, .rank = w};
    policy_registry_of_kind(((policy_state *)ctx)->pc->kind)->worker(&arg);
}

int policy_run(const policy_config *pc, exchange *ex, step_source *src, policy_record_fn record,
               void *record_ctx, policy_result *res) {
    int rc = check_policy(pc);
    if (rc == SS_OK) rc = check_source(pc, src);
    if (rc != SS_OK) return rc;
    SS_ASSERT(policy_registry_of_kind(pc->kind)->worker != NULL);
    memset(res, 0, sizeof *res);
    policy_state st;
    state_init(&st, pc, src, record, record_ctx, res);
    src->counters = &st.counters;
    st.ex = ex;
    rc = start_exchange(&st);
    exchange_hosted ran;
    if (rc == SS_OK) rc = ex->ops->run_workers(ex->self, pc->workers, run_worker, &st, &ran);
    if (rc == SS_OK) collect(&st, &ran, res);
    state_free(&st);
    src->counters = NULL;
    return rc;
}
