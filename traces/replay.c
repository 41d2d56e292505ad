/* The replay step source and the replay runner (replay.h). */
#include "traces/replay.h"
#include "sim/net/topology.h"
#include "common/outputs.h"
#include "common/rng.h"
#include "common/status.h"
#include "sim/policy/policy_registry.h"
#include "sim/net/coll/collective.h"
#include "sim/simulate.h"

#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <simgrid/host.h>
#include <xbt/config.h>

/* Random stream of the scale-out draws of worker w: REPLAY_STREAM_SCALE_OUT + w, apart from the
 * streams of common/rng.h (the policies' stragglers use RNG_STREAM_NETWORK + w). */
#define REPLAY_STREAM_SCALE_OUT ((uint64_t)5 << 20)

/* From this many workers (where the collectives turn to their closed forms), actors run without
 * stack guard pages, on stacks of this size taken from the heap: with the guards, about 9 memory
 * mappings a worker reached vm.max_map_count (65530) at 4096 workers, and under --overlap, whose
 * every bucket starts a helper actor per worker, mapping and unmapping the stacks took half of
 * the wall time of 1024 workers. */
#define REPLAY_MANY_ACTORS                  SIM_COARSE_MIN_MEMBERS
#define REPLAY_MANY_ACTORS_STACK_KIB        64
#define REPLAY_MANY_ACTORS_MAIN_STACK_BYTES ((rlim_t)112 << 20)

struct replay_source {
    step_source src;
    const trace *t;
    int workers; /* M */
    replay_scale_out scale_out;
    rng *draws;         /* (M) REPLAY_SCALE_SAMPLE: one stream per worker */
    int trace_seconds;  /* 1: charge recorded seconds (trace mode), 0: recorded FLOPs */
    int flops_as_sleep; /* synthesized traces: FLOPs / host speed, charged as a sleep */
    double speed_flops; /* > 0: FLOPs are charged at this speed instead of the host's */
    int interruptible;  /* replay_opts.interruptible */
    progress bar;       /* replay_opts.progress */
    long worker_steps;  /* (worker, step) pairs done: bar's steps are worker_steps / workers */
    double wall0_s;     /* wall clock at the start of the replay */
};

int replay_scale_out_parse(const char *option, const char *text, replay_scale_out *out) {
    if (!strcmp(text, "round-robin")) {
        *out = REPLAY_SCALE_ROUND_ROBIN;
        return SS_OK;
    }
    if (!strcmp(text, "sample")) {
        *out = REPLAY_SCALE_SAMPLE;
        return SS_OK;
    }
    return ss_error_set(SS_EUSAGE, "%s: unknown scale-out '%s' (valid: round-robin, sample)",
                        option, text);
}

const char *replay_scale_out_name(replay_scale_out s) {
    return s == REPLAY_SCALE_SAMPLE ? "sample" : "round-robin";
}

/* A synthesized trace (one worker per host, no stragglers) charges FLOPs / host speed as a sleep:
 * the same duration as executing them on the host, and cheaper for SimGrid (no CPU action in
 * its solver), which counts at thousands of workers. Recorded FLOPs are re-executed, so that a
 * replay of an emulation matches it bit for bit. */
static int replay_flops_as_sleep(const trace *t) {
    return t->pc.compute.mode == SIM_COMPUTE_FLOPS && !strcmp(t->meta.source, "profile");
}

/* A trace synthesized from a profile for the per-layer compute model (--compute model). */
static int replay_model_mode(const trace *t) {
    return t->pc.compute.mode == SIM_COMPUTE_MODEL && !strcmp(t->meta.source, "profile") &&
           t->n_layers > 0;
}

/* The recorded worker whose cost worker w replays at `step`. */
static int source_worker(replay_source *r, int w, long step) {
    (void)step;
    const int n = r->t->workers;
    if (r->workers == n && r->scale_out == REPLAY_SCALE_ROUND_ROBIN) return w;
    if (r->scale_out == REPLAY_SCALE_SAMPLE) return (int)rng_below(&r->draws[w], (uint64_t)n);
    return w % n;
}

static void rp_compute(void *self, int w, long step, int batch, step_cost *cost, step_stats *st) {
    replay_source *r = self;
    memset(st, 0, sizeof *st);
    cost->flops = 0;
    cost->measured_s = 0;
    cost->trace_s = 0;
    /* interrupted: every worker finishes this step, as the emulation's workers do */
    if (r->interruptible && outputs_interrupted() && !r->src.stop_after) r->src.stop_after = step;
    if (step > r->t->steps) { /* a recorded run that ended early: end here too */
        if (!r->src.stop_after) r->src.stop_after = step;
        return;
    }
    const trace_cell *c = trace_cell_at(r->t, step, source_worker(r, w, step));
    if (!c->recorded) {
        if (!r->src.stop_after) r->src.stop_after = step;
        return;
    }
    cost->flops = c->flops;
    cost->layers = r->t->layers;
    cost->n_layers = r->t->n_layers;
    cost->measured_s = c->compute_s;
    cost->trace_s = r->trace_seconds ? c->compute_s : -1;
    if (r->flops_as_sleep)
        cost->trace_s =
            c->flops / (r->speed_flops > 0 ? r->speed_flops : sg_host_get_speed(sg_host_self()));
    st->loss = c->loss;
    st->grad_norm = c->grad_norm;
    st->layer_norm_sum = c->grad_norm;
    st->samples = c->samples > 0 ? c->samples : batch;
}

static void rp_nothing_step(void *self, int w, long step) {
    (void)self;
    (void)w;
    (void)step;
}

static void rp_aggregate(void *self, int worker, long seq, const int *group, int n, int callers,
                         aggregate_what what, const uint8_t *mask, int keep_local) {
    (void)self, (void)worker, (void)seq, (void)group, (void)n, (void)callers, (void)what,
        (void)mask, (void)keep_local;
}

static void rp_ps_apply(void *self, int worker, long step, int shard, int n_shards) {
    (void)self, (void)worker, (void)step, (void)shard, (void)n_shards;
}

static void rp_ps_pull(void *self, int worker, int shard, int n_shards) {
    (void)self, (void)worker, (void)shard, (void)n_shards;
}

static void rp_inject(void *self, int from, int to, int count) {
    (void)self, (void)from, (void)to, (void)count;
}

/* Progress: a step counts as done once every worker could have done it (worker-steps / M). */
static void rp_step_done(void *self, int w, long step, double now_s) {
    (void)w, (void)step;
    replay_source *r = self;
    if (!r->bar.enabled || ++r->worker_steps % r->workers) return;
    const long done = r->worker_steps / r->workers;
    progress_update(&r->bar, done, "step %ld/%ld  sim %.3f s  wall %.1f s", done, r->bar.total,
                    now_s, outputs_wall_s() - r->wall0_s);
}

/* SelSync follows the recorded global decision of the step (the flags are still all-gathered
 * and charged); with no record of the step the policy decides itself. */
static int rp_forced_decision(void *self, long step) {
    replay_source *r = self;
    if (step < 1 || step > r->t->steps) return -1;
    return r->t->decisions[step - 1];
}

static const step_source_ops replay_ops = {
    .name = "replay",
    .compute = rp_compute,
    .apply_local = rp_nothing_step,
    .aggregate = rp_aggregate,
    .ps_apply = rp_ps_apply,
    .ps_pull = rp_ps_pull,
    .inject = rp_inject,
    .step_done = rp_step_done,
    .forced_decision = rp_forced_decision,
};

replay_source *replay_source_create(const trace *t, int workers, replay_scale_out scale_out,
                                    uint64_t seed) {
    SS_ASSERT(t && workers >= 1);
    replay_source *r = ss_calloc(1, sizeof *r);
    r->t = t;
    r->workers = workers;
    r->scale_out = scale_out;
    r->trace_seconds = t->pc.compute.mode != SIM_COMPUTE_FLOPS;
    r->flops_as_sleep = replay_flops_as_sleep(t);
    if (scale_out == REPLAY_SCALE_SAMPLE) {
        r->draws = ss_malloc(sizeof(rng) * (size_t)workers);
        for (int w = 0; w < workers; w++)
            rng_seed(&r->draws[w], seed, REPLAY_STREAM_SCALE_OUT + (uint64_t)w);
    }
    r->src.ops = &replay_ops;
    r->src.self = r;
    r->src.param_count = (size_t)t->meta.param_count;
    r->src.param_bytes = t->meta.param_bytes;
    r->src.sample_bytes = t->meta.sample_bytes;
    r->src.state_bytes = t->meta.state_bytes;
    return r;
}

step_source *replay_source_step_source(replay_source *r) {
    return &r->src;
}

void replay_source_destroy(replay_source *r) {
    if (!r) return;
    free(r->draws);
    free(r);
}

/* ---- runner ---- */

replay_opts replay_opts_default(void) {
    replay_opts o;
    memset(&o, 0, sizeof o);
    o.scale_out = REPLAY_SCALE_ROUND_ROBIN;
    o.seed = 1;
    o.gen = platform_gen_default();
    o.model = SIM_NETWORK_LV08;
    return o;
}

/* --overlap: auto is on for a profile (it has per-layer costs) where the policy's exchange is a
 * plain all-reduce (BSP, FedAvg's post-local BSP steps), and off for recorded traces, which
 * replay as they ran unless told; on needs the per-layer costs (a profile's, or the "# layer"
 * lines of a recorded trace).
 * Under ns-3, auto is off and on is refused: SimGrid 3.32's ns-3 binding aborts when the
 * overlapped buckets' flows congest a link ("total_bytes ... is not sent_bytes"). */
static int resolve_overlap(const trace *t, sim_network_model model, policy_config *pc) {
    const policy_info *p = policy_registry_of_kind(pc->kind);
    const int family = p && policy_option_applies(policy_option_find("overlap"), p);
    const int allreduce = !pc->use_ps && pc->loss_tolerance <= 0;
    const int ns3 = model == SIM_NETWORK_NS3;
    if (pc->overlap == POLICY_OVERLAP_ON && ns3)
        return ss_error_set(SS_EUSAGE, "--overlap on cannot run under --network-model ns-3 "
                                       "(SimGrid's ns-3 binding aborts when the buckets' flows "
                                       "congest a link); use --overlap off or LV08");
    if (pc->overlap == POLICY_OVERLAP_AUTO)
        pc->overlap =
            family && allreduce && t->n_layers > 0 && !ns3 && !strcmp(t->meta.source, "profile")
                ? POLICY_OVERLAP_ON
                : POLICY_OVERLAP_OFF;
    if (pc->overlap == POLICY_OVERLAP_ON && t->n_layers < 1)
        return ss_error_set(SS_EUSAGE,
                            "--overlap on: the %s trace of %s has no per-layer data, so overlap "
                            "cannot apply to it (replay --profile NAME has it; or --overlap off)",
                            t->meta.source, t->meta.model[0] ? t->meta.model : "the run");
    if (pc->overlap == POLICY_OVERLAP_ON && !allreduce)
        return ss_error_set(SS_EUSAGE, "--overlap on applies to all-reduce exchanges without "
                                       "--loss-tolerance (not --collective ps)");
    return SS_OK;
}

int replay_policy_config(const trace *t, const replay_opts *o, policy_config *pc) {
    *pc = t->pc;
    pc->workers = o->workers > 0 ? o->workers : t->pc.workers;
    /* the steps every recorded worker completed (a run may have ended early) */
    pc->steps = t->steps_done < t->pc.steps ? t->steps_done : t->pc.steps;
    if (pc->steps < 1)
        return ss_error_set(SS_EINPUT, "the trace has no step recorded for every worker");
    pc->slowdown = NULL;
    if (pc->eval_every < 1) pc->eval_every = pc->steps;
    if (replay_model_mode(t)) {
        /* a profile's layers through the per-layer GPU model, as emulation times them */
        pc->compute = t->pc.compute;
        if (o->compute_gpu) pc->compute.gpu = o->compute_gpu;
        if (o->coll) {
            pc->coll = *o->coll;
            pc->use_ps = 0;
        }
        return resolve_overlap(t, o->model, pc);
    }
    /* flops mode re-executes FLOPs; any other recorded mode replays the recorded seconds */
    const int as_sleep = replay_flops_as_sleep(t) ||
                         (t->pc.compute.mode == SIM_COMPUTE_FLOPS && o->compute_speed_flops > 0);
    pc->compute = t->pc.compute.mode == SIM_COMPUTE_FLOPS && !as_sleep
                      ? (sim_compute_cfg){.mode = SIM_COMPUTE_FLOPS, .scale = 1.0}
                      : (sim_compute_cfg){.mode = SIM_COMPUTE_TRACE, .scale = 1.0};
    if (o->coll) {
        pc->coll = *o->coll;
        pc->use_ps = 0;
    }
    /* recorded seconds already include the stragglers' slowdown: do not apply it twice */
    if (pc->compute.mode == SIM_COMPUTE_TRACE && !as_sleep) pc->straggler_prob = 0;
    return resolve_overlap(t, o->model, pc);
}

/* 1 when every worker is a node of its own (sim/net/topology.h): there ring-coarse is the ring. */
static int replay_flat(sim_cluster *cluster, int workers) {
    sim_topology *topo;
    if (sim_topology_read(sim_cluster_worker_hosts(cluster), workers, &topo) != SS_OK) return 0;
    int flat = sim_topology_is_flat(topo);
    sim_topology_free(topo);
    return flat;
}

/* At scale the message-level ring costs O(N) messages per worker and step (hours at 1024
 * workers): from SIM_COARSE_MIN_MEMBERS workers on a flat platform, the replay runs its closed
 * form ring-coarse (the same simulated time where bandwidths are equal, within 1 % on fat trees),
 * and says so; on multi-GPU nodes, whose NVLink and NIC hops differ, it does not (auto or
 * hier-coarse scale there). auto's choice for the exchange's size is said too. */
static void replay_choose_collective(const trace *t, sim_cluster *cluster, policy_config *pc) {
    if (pc->use_ps || policy_is_async(pc)) return;
    /* the channels of the recorded run (a config key of the trace), unless set otherwise */
    const char *recorded = trace_config_get(t, "channels");
    if (pc->coll.channels <= 1 && recorded && atoi(recorded) > 1 &&
        atoi(recorded) <= SIM_MAX_CHANNELS)
        pc->coll.channels = atoi(recorded);
    sim_group *world = sim_cluster_world(cluster);
    if (pc->coll.algo == SIM_ALLREDUCE_RING && pc->coll.channels <= 1 &&
        pc->coll.segment_bytes <= 0 && pc->workers >= SIM_COARSE_MIN_MEMBERS &&
        replay_flat(cluster, pc->workers)) {
        pc->coll.algo = SIM_ALLREDUCE_RING_COARSE;
        fprintf(stderr,
                "replay: %d workers: the ring all-reduce runs as ring-coarse, its closed form "
                "(message-level from %d workers on costs hours; same simulated time on uniform "
                "platforms)\n",
                pc->workers, SIM_COARSE_MIN_MEMBERS);
    } else if (pc->coll.algo == SIM_ALLREDUCE_AUTO && t->meta.param_bytes > 0) {
        sim_allreduce_algo a = sim_allreduce_auto_pick(world, t->meta.param_bytes, &pc->coll);
        const int ch = sim_allreduce_auto_channels(world, &pc->coll);
        char channels[32] = "";
        if (a == SIM_ALLREDUCE_RING && ch > 1)
            snprintf(channels, sizeof channels, " (%d channels)", ch);
        const sim_nccl_protocol p =
            sim_allreduce_protocol(world, pc->coll.algo, a, t->meta.param_bytes, &pc->coll);
        char proto[32] = "";
        if (p != SIM_PROTOCOL_AUTO) /* a single worker runs none */
            snprintf(proto, sizeof proto, ", protocol %s", sim_nccl_protocol_name(p));
        fprintf(stderr, "replay: --collective auto: %s%s%s, for %.0f bytes at %d workers%s\n",
                sim_allreduce_algo_name(a), channels, proto, t->meta.param_bytes, pc->workers,
                a == SIM_ALLREDUCE_RING_COARSE || a == SIM_ALLREDUCE_HIER_COARSE
                    ? " (closed form, at scale)"
                    : "");
    }
}

int replay_run(const trace *t, const replay_opts *o, replay_result *out) {
    memset(out, 0, sizeof *out);
    const double t0 = outputs_wall_s();
    policy_config pc;
    int rc = replay_policy_config(t, o, &pc);
    if (rc != SS_OK) return rc;
    const int async = policy_is_async(&pc);
    const int n_ps = (async || pc.use_ps) ? pc.ps_servers : 0;
    platform_temp tmp = {.fd = -1};
    const char *platform = o->platform_path;
    if (!platform) {
        platform_gen_spec spec = o->gen;
        spec.n_hosts = pc.workers;
        spec.n_ps = n_ps;
        if (o->gen_path) {
            platform = o->gen_path;
            rc = platform_generate_file(&spec, platform);
        } else {
            rc = platform_temp_generate(&spec, &tmp);
            platform = tmp.path;
        }
        if (rc != SS_OK) return rc;
    }
    sim_cluster_opts co = {.platform_path = platform,
                           .n_workers = pc.workers,
                           .n_ps = n_ps,
                           .model = o->model,
                           .verbose = 0};
    sim_cluster *cluster = NULL;
    rc = sim_cluster_open(&co, &cluster);
    platform_temp_close(&tmp);
    if (rc != SS_OK) return rc;
    /* SimGrid's engine, started by the cluster, put its own SIGINT handler in place (it exits
     * 1, or aborts, without outputs): ours again, so that the step loop sees the flag */
    if (o->interruptible) outputs_install_interrupt_handler();
    replay_choose_collective(t, cluster, &pc);
    /* fixed slow workers: FLOPs are replayed raw, so the slowdown applies again (worker j takes
     * recorded worker j mod N's); recorded seconds already include it */
    double *slowdown = NULL;
    if (t->slowdown && t->pc.compute.mode == SIM_COMPUTE_FLOPS) {
        slowdown = ss_malloc(sizeof(double) * (size_t)pc.workers);
        for (int w = 0; w < pc.workers; w++)
            slowdown[w] = t->slowdown[w % t->pc.workers];
        pc.slowdown = slowdown;
    }
    if (pc.workers >= REPLAY_MANY_ACTORS) {
        /* SimGrid guards each actor's stack with a protected page: two memory mappings per
         * actor, and Linux allows 65530 per process (vm.max_map_count). Without the guard, and
         * with smaller stacks (the protocols use about 20 KiB), 65536 workers fit. */
        sg_cfg_set_int("contexts/guard-size", 0);
        sg_cfg_set_int("contexts/stack-size", REPLAY_MANY_ACTORS_STACK_KIB);
        /* ... and stacks from the heap, not one mapping each */
        mallopt(M_MMAP_THRESHOLD, 4 * 1024 * REPLAY_MANY_ACTORS_STACK_KIB);
        /* SimGrid's solver recurses along chains of flows that share links (a ring of M
         * workers is one chain of M flows), on the main thread's stack: let it grow */
        struct rlimit rl;
        if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
            rl.rlim_cur < REPLAY_MANY_ACTORS_MAIN_STACK_BYTES) {
            rl.rlim_cur =
                rl.rlim_max == RLIM_INFINITY || rl.rlim_max > REPLAY_MANY_ACTORS_MAIN_STACK_BYTES
                    ? REPLAY_MANY_ACTORS_MAIN_STACK_BYTES
                    : rl.rlim_max;
            setrlimit(RLIMIT_STACK, &rl);
        }
    }
    replay_source *src = replay_source_create(t, pc.workers, o->scale_out, o->seed);
    src->interruptible = o->interruptible;
    src->wall0_s = t0;
    progress_begin(&src->bar, o->progress, pc.steps);
    if (t->pc.compute.mode == SIM_COMPUTE_FLOPS && o->compute_speed_flops > 0) {
        src->flops_as_sleep = 1;
        src->speed_flops = o->compute_speed_flops;
    }
    rc = sim_policy_run(&pc, cluster, replay_source_step_source(src), o->record, o->record_ctx,
                        &out->res);
    progress_end(&src->bar);
    out->pc = pc;
    out->pc.slowdown = NULL;
    free(slowdown);
    out->host_speed_flops = sg_host_get_speed(sim_cluster_worker_host(cluster, 0));
    replay_source_destroy(src);
    sim_cluster_close(cluster);
    out->wall_s = outputs_wall_s() - t0;
    return rc;
}
