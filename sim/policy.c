/* Policy runner and the helpers the worker protocols share. */
#include "sim/policy.h"
#include "common/status.h"
#include "sim/policy_internal.h"

#include <math.h>
#include <simgrid/engine.h>
#include <stdlib.h>
#include <string.h>

double policy_now(void) {
    return simgrid_get_clock();
}

void policy_begin_step(policy_state *st, int w, long step, step_acc *a) {
    (void)st;
    memset(a, 0, sizeof *a);
    a->rec.step = step;
    a->rec.worker = w;
    a->rec.start_s = policy_now();
}

void policy_compute(policy_state *st, int w, long step, int batch, step_acc *a, step_stats *stats) {
    step_cost cost = {0, 0, -1};
    memset(stats, 0, sizeof *stats);
    st->src->ops->compute(st->src->self, w, step, batch, &cost, stats);
    /* Stragglers: a fixed slowdown of some workers, and random slow steps (one draw a step). */
    double slowdown = st->pc->slowdown ? st->pc->slowdown[w] : 1.0;
    if (st->pc->straggler_prob > 0 && rng_uniform(&st->straggler[w]) < st->pc->straggler_prob)
        slowdown *= st->pc->straggler_factor;
    sim_step_cost sc = {.flops = cost.flops,
                        .measured_s = cost.measured_s,
                        .trace_s = cost.trace_s,
                        .slowdown = slowdown};
    double dt = 0;
    int rc = sim_compute_step(&st->pc->compute, &sc, &dt);
    SS_ASSERT(rc == SS_OK);
    a->rec.compute_s += dt;
    a->rec.flops = cost.flops;
    a->rec.loss = stats->loss;
    a->rec.grad_norm = stats->grad_norm;
    a->rec.samples = stats->samples;
}

/* The slot of synchronization `id` among all workers (key -1) or in the group whose first member
 * is `key`. */
static sync_slot *sync_slot_of(policy_state *st, long id, int key) {
    return &st->slots[(size_t)(key + 1) * SYNC_SLOTS + (size_t)(id % SYNC_SLOTS)];
}

double policy_sync_enter(policy_state *st, long id, int key) {
    double now = policy_now();
    sync_slot *s = sync_slot_of(st, id, key);
    if (s->id != id) {
        s->id = id;
        s->max_entry = now;
    } else if (now > s->max_entry) {
        s->max_entry = now;
    }
    return now;
}

void policy_sync_leave(policy_state *st, long id, int key, double entry_s, double bytes,
                       step_acc *a) {
    double now = policy_now();
    const sync_slot *s = sync_slot_of(st, id, key);
    SS_ASSERT(s->id == id);
    double wait = s->max_entry - entry_s;
    if (wait < 0) wait = 0;
    if (wait > now - entry_s) wait = now - entry_s;
    a->rec.wait_s += wait;
    a->rec.comm_s += (now - entry_s) - wait;
    a->rec.bytes_sent += bytes;
    st->counters.bytes_sent += bytes;
}

void policy_end_step(policy_state *st, int w, step_acc *a) {
    st->compute_s[w] += a->rec.compute_s;
    st->comm_s[w] += a->rec.comm_s;
    st->wait_s[w] += a->rec.wait_s;
    if (st->record) st->record(st->record_ctx, &a->rec);
    st->src->ops->step_done(st->src->self, w, a->rec.step, policy_now());
}

static int check_config(const policy_config *pc, const sim_cluster *c) {
    if (pc->workers < 1 || pc->steps < 1 || pc->batch < 1)
        return ss_error_set(SS_EUSAGE, "policy: workers, steps and batch must be positive");
    if (sim_cluster_n_workers(c) != pc->workers)
        return ss_error_set(SS_EUSAGE, "policy: the cluster maps %d workers, the policy wants %d",
                            sim_cluster_n_workers(c), pc->workers);
    int needs_ps = pc->use_ps || pc->kind == POLICY_SSP || pc->kind == POLICY_ASP;
    if (needs_ps && sim_cluster_n_ps(c) < pc->ps_servers)
        return ss_error_set(SS_EUSAGE,
                            "policy %s needs %d parameter server host(s); the cluster "
                            "maps %d",
                            policy_kind_name(pc->kind), pc->ps_servers, sim_cluster_n_ps(c));
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

int policy_run(const policy_config *pc, sim_cluster *cluster, step_source *src,
               policy_record_fn record, void *record_ctx, policy_result *res) {
    int rc = check_config(pc, cluster);
    if (rc != SS_OK) return rc;
    const int n = pc->workers;
    memset(res, 0, sizeof *res);
    policy_state st;
    memset(&st, 0, sizeof st);
    st.pc = pc;
    st.cluster = cluster;
    st.world = sim_cluster_world(cluster);
    st.src = src;
    st.record = record;
    st.record_ctx = record_ctx;
    st.res = res;
    st.slots = ss_malloc(sizeof(sync_slot) * (size_t)(n + 1) * SYNC_SLOTS);
    for (int i = 0; i < (n + 1) * SYNC_SLOTS; i++)
        st.slots[i].id = -1;
    st.flags[0] = ss_calloc((size_t)n, 1);
    st.flags[1] = ss_calloc((size_t)n, 1);
    st.agg_seq = ss_calloc((size_t)n, sizeof(long));
    st.compute_s = ss_calloc((size_t)n, sizeof(double));
    st.comm_s = ss_calloc((size_t)n, sizeof(double));
    st.wait_s = ss_calloc((size_t)n, sizeof(double));
    st.clock = ss_calloc((size_t)n, sizeof(long));
    st.pulled_version = ss_calloc((size_t)n, sizeof(long));
    st.mutex = sg_mutex_init();
    st.clock_advanced = sg_cond_init();
    st.straggler = ss_calloc((size_t)n, sizeof(rng));
    for (int w = 0; w < n; w++)
        rng_seed(&st.straggler[w], pc->seed, RNG_STREAM_NETWORK + (uint64_t)w);
    src->counters = &st.counters;
    if (pc->background_load > 0) {
        /* cross traffic among every host of the run: the workers and the servers */
        int nps = sim_cluster_n_ps(cluster);
        sg_host_t *hosts = ss_malloc(sizeof(sg_host_t) * (size_t)(n + nps));
        for (int w = 0; w < n; w++)
            hosts[w] = sim_cluster_worker_host(cluster, w);
        for (int k = 0; k < nps; k++)
            hosts[n + k] = sim_cluster_ps_host(cluster, k);
        rc = sim_background_start(hosts, n + nps, pc->background_load, pc->seed, &st.background);
        free(hosts);
        if (rc != SS_OK) goto done;
    }

    const int async = pc->kind == POLICY_SSP || pc->kind == POLICY_ASP;
    if (async || pc->use_ps) {
        sim_ps_opts po = {.n_workers = n,
                          .worker_hosts = sim_cluster_worker_hosts(cluster),
                          .n_servers = pc->ps_servers,
                          .server_hosts = sim_cluster_ps_hosts(cluster),
                          .mode = async ? SIM_PS_ASYNC : SIM_PS_SYNC,
                          .request_bytes = 0};
        if (async) policy_ssp_hooks(&po.hooks, &st);
        if ((rc = sim_ps_start(&po, &st.ps)) != SS_OK) goto done;
    }
    worker_arg *args = ss_calloc((size_t)n, sizeof *args);
    for (int w = 0; w < n; w++) {
        args[w].st = &st;
        args[w].rank = w;
        sim_actor_spawn("worker", w, sim_cluster_worker_host(cluster, w),
                        async ? policy_worker_ssp : policy_worker_sync, &args[w]);
    }
    double end_s = 0;
    rc = sim_cluster_run(cluster, &end_s);
    free(args);
    if (rc != SS_OK) goto done;

    res->sim_time_s = end_s;
    res->steps = pc->steps;
    res->sync_steps = st.counters.sync_steps;
    res->lssr = 1.0 - (double)res->sync_steps / (double)res->steps;
    res->bytes_sent = st.counters.bytes_sent;
    for (int w = 0; w < n; w++) {
        res->compute_s += st.compute_s[w] / n;
        res->comm_s += st.comm_s[w] / n;
        res->wait_s += st.wait_s[w] / n;
    }
done:
    if (st.ps) sim_ps_free(st.ps);
    sim_background_free(st.background);
    policy_dlcp_free(&st);
    free(st.straggler);
    sg_cond_destroy(st.clock_advanced);
    sg_mutex_destroy(st.mutex);
    free(st.slots);
    free(st.flags[0]);
    free(st.flags[1]);
    free(st.agg_seq);
    free(st.compute_s);
    free(st.comm_s);
    free(st.wait_s);
    free(st.clock);
    free(st.pulled_version);
    src->counters = NULL;
    return rc;
}
