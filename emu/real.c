/* Real mode's runner (syncsim real): MPI started by mpirun, one rank per worker and per
 * parameter server; every rank opens the run as an emulation does, runs its worker's protocol
 * (or a server) through policy_run over the MPI exchange, and the parts meet on rank 0, which
 * writes the outputs. */
#include "emu/real.h"
#include "common/mpi_api.h"
#include "common/status.h"
#include "emu/run_internal.h"
#include "sim/exchange/exchange_mpi.h"
#include "sim/policy/policy_build.h"
#include "sim/policy/policy_registry.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void real_records_add(void *ctx, const step_record *r) {
    real_records *recs = ctx;
    if (recs->n == recs->cap) {
        recs->cap = recs->cap ? 2 * recs->cap : 1024;
        recs->v = realloc(recs->v, recs->cap * sizeof *recs->v);
        SS_ASSERT(recs->v != NULL);
    }
    recs->v[recs->n++] = *r;
}

void real_records_free(real_records *recs) {
    free(recs->v);
    memset(recs, 0, sizeof *recs);
}

/* The ranks of the run (MPI_COMM_WORLD: workers, then servers). */
static int world_size(void) {
    const mpi_api *m;
    int n = 0;
    if (mpi_api_load(&m) == SS_OK) m->comm_size(m->comm_world, &n);
    return n;
}

/* ---- results ---- */

int real_combine_results(exchange *ex, const policy_config *pc, policy_result *res) {
    enum { SUMS = 5 + 2 * POLICY_STALENESS_BINS };
    /* servers report no steps: a worker's count (fewer than pc->steps when interrupted) */
    const double steps = exchange_mpi_is_server(ex) ? 0 : (double)res->steps;
    double sums[SUMS], maxima[4] = {res->sim_time_s, (double)res->max_clock_gap,
                                    (double)res->max_update_staleness, steps};
    sums[0] = res->compute_s, sums[1] = res->comm_s, sums[2] = res->wait_s;
    sums[3] = res->bytes_sent, sums[4] = (double)res->sync_steps;
    for (int i = 0; i < POLICY_STALENESS_BINS; i++) {
        sums[5 + i] = (double)res->clock_gap_hist[i];
        sums[5 + POLICY_STALENESS_BINS + i] = (double)res->update_staleness_hist[i];
    }
    int rc = exchange_mpi_allreduce_doubles(ex, sums, SUMS, 0);             /* sums */
    if (rc == SS_OK) rc = exchange_mpi_allreduce_doubles(ex, maxima, 4, 1); /* maxima */
    if (rc != SS_OK) return rc;
    const int n = pc->workers;
    res->compute_s = sums[0] / n, res->comm_s = sums[1] / n, res->wait_s = sums[2] / n;
    res->bytes_sent = sums[3];
    res->steps = (long)maxima[3];
    /* every step of SSP/ASP goes through the servers; the others count the steps that did */
    res->sync_steps = policy_is_async(pc) ? res->steps : (long)sums[4];
    res->lssr = 1.0 - (double)res->sync_steps / (double)res->steps;
    for (int i = 0; i < POLICY_STALENESS_BINS; i++) {
        res->clock_gap_hist[i] = (long)sums[5 + i];
        res->update_staleness_hist[i] = (long)sums[5 + POLICY_STALENESS_BINS + i];
    }
    res->sim_time_s = maxima[0];
    res->max_clock_gap = (long)maxima[1];
    res->max_update_staleness = (long)maxima[2];
    return SS_OK;
}

/* ---- evaluation ---- */

/* The server's parameters, shard k from server rank N + k (exchange.h's shard rule). */
static void assemble_ps(const char *all, const size_t *counts, int workers, int servers, size_t p,
                        float *ps) {
    size_t off = 0;
    for (int r = 0; r < workers; r++)
        off += counts[r];
    const size_t b = p / (size_t)servers, rem = p % (size_t)servers;
    for (int k = 0; k < servers; k++) {
        const float *mine = (const float *)(all + off);
        size_t lo = (size_t)k * b + ((size_t)k < rem ? (size_t)k : rem);
        size_t count = b + ((size_t)k < rem);
        if (counts[workers + k] == p * sizeof(float))
            memcpy(ps + lo, mine + lo, count * sizeof(float));
        off += counts[workers + k];
    }
}

/* A rank's part: its snapshots' headers then their parameters. */
static int gather_snapshots(exchange *ex, emulation *em, char **all, size_t *counts) {
    const emulation_snapshot *snaps;
    const float *params;
    size_t n = emulation_snapshots(em, &snaps, &params);
    const size_t p = emulation_source(em)->param_count;
    size_t bytes = n * (sizeof *snaps + p * sizeof(float));
    char *mine = ss_malloc(bytes ? bytes : 1);
    if (n) { /* a server rank keeps none */
        memcpy(mine, snaps, n * sizeof *snaps);
        memcpy(mine + n * sizeof *snaps, params, n * p * sizeof(float));
    }
    int rc = exchange_mpi_gather_bytes(ex, mine, bytes, (void **)all, counts);
    free(mine);
    return rc;
}

/* Rank 0: one evaluation from snapshot idx[w] of every worker w, whose part holds n_of[w]. */
static void evaluate_snapshot(emulation *em, const policy_config *pc, char *const *part,
                              const size_t *n_of, const size_t *idx, const float *ps) {
    const int n = pc->workers;
    const size_t p = emulation_source(em)->param_count;
    const float **params = ss_malloc(sizeof(float *) * (size_t)n);
    step_counters c = {0};
    double now = 0, loss = 0, count = 0, samples = 0;
    long step = 0;
    for (int w = 0; w < n; w++) {
        const emulation_snapshot *s = (const emulation_snapshot *)part[w] + idx[w];
        params[w] = (const float *)(part[w] + n_of[w] * sizeof *s) + idx[w] * p;
        if (s->step > step) step = s->step; /* interrupted asynchronous workers: the latest */
        now = s->now_s > now ? s->now_s : now;
        c.sync_steps += s->sync_steps;
        c.bytes_sent += s->bytes_sent;
        loss += s->loss_sum, count += s->loss_count, samples += s->samples;
    }
    if (policy_is_async(pc)) c.sync_steps = step;
    emulation_evaluate_given(em, params, ps, step, now, &c, count > 0 ? loss / count : NAN,
                             samples);
    free(params);
}

int real_evaluate(exchange *ex, emulation *em, const policy_config *pc, int stopped) {
    char *all = NULL;
    const int ranks = world_size(), n = pc->workers;
    size_t *counts = ss_calloc((size_t)ranks, sizeof(size_t));
    int rc = gather_snapshots(ex, em, &all, counts);
    const size_t p = emulation_source(em)->param_count;
    float *ps = ss_malloc(p * sizeof(float));
    const int async = policy_is_async(pc);
    /* the servers' parameters: one more gather, of every server's vector */
    if (rc == SS_OK && async) {
        char *ps_all = NULL;
        size_t *ps_counts = ss_calloc((size_t)ranks, sizeof(size_t));
        int have = exchange_mpi_rank(ex) >= n && emulation_ps_download(em, ps);
        rc = exchange_mpi_gather_bytes(ex, ps, have ? p * sizeof(float) : 0, (void **)&ps_all,
                                       ps_counts);
        if (rc == SS_OK && exchange_mpi_rank(ex) == 0)
            assemble_ps(ps_all, ps_counts, n, ranks - n, p, ps);
        free(ps_all);
        free(ps_counts);
    }
    if (rc == SS_OK && exchange_mpi_rank(ex) == 0) {
        const size_t per = sizeof(emulation_snapshot) + p * sizeof(float);
        char **part = ss_malloc(sizeof(char *) * (size_t)n);
        size_t *n_of = ss_malloc(sizeof(size_t) * (size_t)n);
        size_t *idx = ss_malloc(sizeof(size_t) * (size_t)n);
        size_t off = 0, n_min = SIZE_MAX, n_max = 0;
        for (int w = 0; w < n; w++) {
            part[w] = all + off;
            off += counts[w];
            n_of[w] = counts[w] / per;
            if (n_of[w] < n_min) n_min = n_of[w];
            if (n_of[w] > n_max) n_max = n_of[w];
        }
        /* Equal counts, unless an interruption stopped asynchronous workers at different
         * steps: then the evaluations they all passed, and a last one of each worker's last
         * snapshot (the step it stopped at). */
        if (n_min != n_max && !(stopped && policy_is_async(pc)))
            rc = ss_error_set(SS_EINPUT,
                              "real mode: the workers kept from %zu to %zu evaluation snapshots",
                              n_min, n_max);
        for (size_t i = 0; i < n_min && rc == SS_OK; i++) {
            const int last = i + 1 == n_min;
            for (int w = 0; w < n; w++)
                idx[w] = last ? n_of[w] - 1 : i;
            evaluate_snapshot(em, pc, part, n_of, idx, async && last ? ps : NULL);
        }
        free(idx);
        free(n_of);
        free(part);
    }
    free(ps);
    free(all);
    free(counts);
    return rc;
}

/* ---- records ---- */

static double record_end(const step_record *r) {
    return r->start_s + r->compute_s + r->comm_s + r->wait_s;
}

static int compare_records(const void *a, const void *b) {
    const step_record *x = a, *y = b;
    double ex = record_end(x), ey = record_end(y);
    if (ex != ey) return (ex > ey) - (ex < ey);
    if (x->worker != y->worker) return (x->worker > y->worker) - (x->worker < y->worker);
    return (x->step > y->step) - (x->step < y->step);
}

int real_gather_records(exchange *ex, real_records *recs) {
    const int ranks = world_size();
    size_t *counts = ss_calloc((size_t)ranks, sizeof(size_t));
    void *all = NULL;
    int rc = exchange_mpi_gather_bytes(ex, recs->v, recs->n * sizeof(step_record), &all, counts);
    if (rc == SS_OK && exchange_mpi_rank(ex) == 0) {
        size_t total = 0;
        for (int r = 0; r < ranks; r++)
            total += counts[r];
        free(recs->v);
        recs->v = all;
        recs->n = recs->cap = total / sizeof(step_record);
        all = NULL;
        qsort(recs->v, recs->n, sizeof(step_record), compare_records);
    }
    free(all);
    free(counts);
    return rc;
}

/* ---- the runner ---- */

/* The non-blocking all-reduces of --overlap on run in OpenMPI's libnbc, whose own choice for
 * large vectors took 1.7 times as long as the blocking ring on the testbed (a 1.8 MB cnn
 * gradient at 1 Gbit/s): unless the user set it, libnbc runs the algorithm --collective names
 * (its ring, Rabenseifner's halving and doubling for hd, recursive doubling for rd). Set
 * before MPI starts, which reads its parameters from the environment then. */
static void real_libnbc_algorithm(const char *collective) {
    const char *alg = !strcmp(collective, "ring") ? "1"
                      : !strcmp(collective, "hd") ? "3"
                      : !strcmp(collective, "rd") ? "4"
                                                  : NULL;
    if (alg) setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", alg, 0);
}

/* MPI, as mpirun started this process: one rank per worker, then one per parameter server. */
static int real_start(emu_run *r) {
    if (!mpi_api_under_launcher())
        return ss_error_set(SS_EUSAGE, "syncsim real runs one MPI rank per worker, plus one per "
                                       "parameter server: start it under mpirun (mpirun -np N "
                                       "syncsim real ...; on the testbed: scripts/testbed.sh run "
                                       "-- syncsim real ...)");
    real_libnbc_algorithm(r->cfg->collective);
    /* --overlap on: a thread of the worker moves the buckets' all-reduces during the backward
     * pass (sim/policy/policy_step.c) */
    const int overlap = !strcmp(policy_option_value(r->cfg, "overlap")->text, "on");
    const mpi_api *m;
    int rc = mpi_api_init_level(&m, overlap ? MPI_API_THREAD_MULTIPLE : MPI_API_THREAD_FUNNELED);
    if (rc != SS_OK) return rc;
    m->comm_rank(m->comm_world, &r->rank);
    m->comm_size(m->comm_world, &r->ranks);
    return SS_OK;
}

/* The ranks mpirun started against the workers and servers the options ask for, before any
 * data is loaded. */
static int real_check_ranks(const emu_run *r) {
    policy_config pc;
    policy_build_env env = {.mode = POLICY_BUILD_RUN, .train_samples = 0};
    int rc = policy_config_build(r->cfg, &env, &pc);
    free((void *)pc.slowdown);
    if (rc != SS_OK) return rc;
    const int servers = run_servers_of(&pc);
    if (r->ranks != r->cfg->workers + servers)
        return ss_error_set(SS_EUSAGE,
                            "syncsim real: mpirun started %d ranks; --workers %d with %d parameter "
                            "server(s) needs %d (mpirun -np %d)",
                            r->ranks, r->cfg->workers, servers, r->cfg->workers + servers,
                            r->cfg->workers + servers);
    if (pc.loss_tolerance > 0)
        return ss_error_set(SS_EUSAGE, "syncsim real: DLCP (--loss-tolerance above 0) cannot run "
                                       "on real processes: MPI cannot end a collective with part "
                                       "of its data missing; use --loss-tolerance 0");
    return SS_OK;
}

/* Every rank's status of the set-up, agreed before the ranks wait for each other: a rank that
 * failed (its message printed) makes all of them stop, with the worst status. */
static int real_agree(int rc) {
    const mpi_api *m;
    if (!mpi_api_started() || mpi_api_load(&m) != SS_OK) return rc;
    int mine = rc, worst = rc;
    if (m->allreduce(&mine, &worst, 1, m->type_int, m->op_max, m->comm_world) != 0) return rc;
    if (rc == SS_OK && worst != SS_OK)
        return ss_error_set(worst, "syncsim real: another rank could not start (its message "
                                   "above)");
    return rc;
}

/* Real mode's answer to an interruption (step_source.stop_check): mpirun passes SIGINT and
 * SIGTERM on to every rank as SIGTERM, which they may see at slightly different steps.
 * Asynchronous workers stop on their own (the servers let a finished worker's clock go);
 * synchronous ones stop together, at the step after some worker voted to (a vote per step,
 * waited one step later: exchange_mpi_stop_vote). */
static int real_stop_check(void *ctx, long step) {
    (void)step;
    emu_run *r = ctx;
    if (policy_is_async(&r->pc)) return outputs_interrupted();
    int any = 0;
    if (exchange_mpi_stop_vote(r->ex, outputs_interrupted(), &any) != SS_OK) return 0;
    return any;
}

/* A record of this rank's worker, kept for rank 0; rank 0 also draws its progress (its own
 * worker's steps: synchronous workers move together, asynchronous ones are close to it). */
static void real_on_record(void *ctx, const step_record *rec) {
    emu_run *r = ctx;
    real_records_add(&r->recs, rec);
    if (r->rank == 0)
        progress_update(&r->ctx.bar, rec->step, "step %ld/%ld  sim %.2f s", rec->step, r->pc.steps,
                        rec->start_s + rec->compute_s + rec->comm_s + rec->wait_s);
}

/* The run on this rank, then its parts combined on rank 0. The clock starts when every rank is
 * ready (the exchange opens with a barrier), after the data are loaded. */
static int simulate_real(emu_run *r) {
    const policy_config *pc = &r->pc;
    const int servers = r->ranks - r->cfg->workers;
    exchange_mpi_opts xo = {.n_workers = r->cfg->workers, .n_servers = servers};
    int rc = exchange_mpi_open(&xo, &r->ex);
    if (rc != SS_OK) return rc;
    outputs_install_interrupt_handler();
    step_source *src = emulation_source(r->em);
    if (r->rank < r->cfg->workers) {
        src->stop_check = real_stop_check;
        src->stop_ctx = r;
    }
    if (r->rank == 0) progress_begin(&r->ctx.bar, r->cfg->progress, pc->steps);
    rc = policy_run(pc, r->ex, src, real_on_record, r, &r->pr);
    if (r->rank == 0) progress_end(&r->ctx.bar);
    /* stopped early: every worker's snapshot of its last step, for the last evaluation */
    src->counters = NULL; /* the runner's, gone with it */
    if (rc == SS_OK && src->stop_after > 0) {
        const step_counters c = {r->pr.sync_steps, r->pr.bytes_sent};
        emulation_snapshot_stop(r->em, r->rank, src->stop_after, r->ex->ops->now(r->ex->self), &c);
    }
    double stopped = src->stop_after > 0;
    if (rc == SS_OK) rc = exchange_mpi_allreduce_doubles(r->ex, &stopped, 1, 1);
    r->stopped = stopped > 0;
    if (rc == SS_OK) rc = real_combine_results(r->ex, pc, &r->pr);
    if (rc == SS_OK) rc = real_evaluate(r->ex, r->em, pc, r->stopped);
    if (rc == SS_OK) rc = real_gather_records(r->ex, &r->recs);
    if (rc != SS_OK || r->rank != 0) return rc;
    for (size_t i = 0; i < r->recs.n; i++)
        run_on_record(&r->ctx, &r->recs.v[i]);
    r->worker_accuracy = emulation_worker_accuracy_mean(r->em);
    return SS_OK;
}

int run_train_real(const run_request *rq, run_summary *sum) {
    run_summary_init(sum);
    run_config cfg = *rq->cfg;
    if (!strcmp(cfg.device, "auto")) snprintf(cfg.device, sizeof cfg.device, "cpu");
    run_request req = *rq;
    req.cfg = &cfg;
    emu_run r;
    memset(&r, 0, sizeof r);
    r.rq = &req;
    r.cfg = &cfg;
    r.ctx.cfg = &cfg;
    r.ctx.tta_s = -1;
    r.real = 1;
    /* a signal during the start-up (MPI, the data) is kept: the run then stops after step 1 */
    outputs_install_interrupt_handler();
    policy_config_default(&r.pc);
    const double wall0 = outputs_wall_s();
    int rc = real_start(&r);
    if (rc == SS_OK) rc = real_check_ranks(&r);
    if (rc == SS_OK) rc = run_open(&r);
    rc = real_agree(rc);
    if (rc == SS_OK) {
        if (r.rank == 0) run_print_banner(&r);
        rc = simulate_real(&r);
    }
    if (rc == SS_OK && r.rank == 0) rc = run_finish(&r, sum, wall0);
    real_records_free(&r.recs);
    if (r.ex) exchange_mpi_close(r.ex);
    run_close(&r);
    if (mpi_api_started()) mpi_api_finalize();
    return rc;
}
