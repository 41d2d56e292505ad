/* Trace-driven replay: the same policy actors as emulation (sim/policy/policy.h), driven by a step
 * source that gives each (worker, step) the cost recorded in a trace, with no tensors.
 *
 *     trace *t; trace_load("out/steps.trace", &t);
 *     replay_opts ro = replay_opts_default();   ro.workers = 1024;   // scale out (0: recorded)
 *     ro.platform_path = "p.xml";               // or NULL: generate from ro.gen
 *     replay_result rr;
 *     replay_run(t, &ro, &rr);          // one SimGrid simulation: once per process (isolate.h)
 *
 * Costs: a trace synthesized from a profile in model mode (profile_synthesize) charges each step,
 * and each layer under overlap, with the per-layer GPU model (sim/compute/compute.h) on the
 * worker's GPU class; a trace recorded in flops mode re-executes each step's FLOPs on the worker's
 * host (on the recorded platform that is the same time bit for bit; on another platform, the time
 * of that platform's GPUs); a trace in measured or trace mode (and an imported log) replays the
 * recorded seconds. Scale-out (M > N recorded workers): worker j takes its costs from recorded
 * worker j mod N (round-robin), or, with REPLAY_SCALE_SAMPLE, from a recorded worker drawn
 * uniformly for every step from a stream seeded by (seed, j). SelSync follows the recorded global
 * decision of each step (forced_decision); see traces/FORMAT.md for what scale-out means for each
 * policy.
 */
#ifndef SS_TRACES_REPLAY_H
#define SS_TRACES_REPLAY_H

#include "sim/net/cluster.h"
#include "sim/platform/platform_gen.h"
#include "sim/policy/policy.h"
#include "traces/trace.h"

typedef enum replay_scale_out {
    REPLAY_SCALE_ROUND_ROBIN = 0, /* worker j replays recorded worker j mod N */
    REPLAY_SCALE_SAMPLE = 1       /* each step, a recorded worker drawn with seed (seed, j) */
} replay_scale_out;

/* "round-robin" | "sample"; SS_EUSAGE naming `option` otherwise. */
int replay_scale_out_parse(const char *option, const char *text, replay_scale_out *out);
const char *replay_scale_out_name(replay_scale_out s);

typedef struct replay_source replay_source; /* opaque */

/* A step source replaying `t` for `workers` workers (>= 1). The source reads t until destroyed. */
replay_source *replay_source_create(const trace *t, int workers, replay_scale_out scale_out,
                                    uint64_t seed);
step_source *replay_source_step_source(replay_source *r);
void replay_source_destroy(replay_source *r);

typedef struct replay_opts {
    int workers;                  /* M: 0 = the recorded N */
    replay_scale_out scale_out;   /* how M > N workers take recorded costs */
    uint64_t seed;                /* scale-out draws (REPLAY_SCALE_SAMPLE) */
    const char *platform_path;    /* a SimGrid platform; NULL: generate one from `gen` */
    platform_gen_spec gen;        /* generated platform (n_hosts and n_ps are set by replay_run) */
    const char *gen_path;         /* where to write the generated platform (NULL: a file without a
                                     name, platform_temp_generate) */
    sim_network_model model;      /* network model */
    double compute_speed_flops;   /* > 0: a flops-mode trace's FLOPs take FLOPs / this seconds
                                     (a GPU class on a given platform), not the host's speed */
    const gpu_class *compute_gpu; /* model mode (a profile's trace): every worker's GPU class;
                                     NULL: the class of its host in the platform */
    const sim_coll_opts *coll;    /* NULL: the recorded collective (ring-coarse for large M) */
    policy_record_fn record;      /* may be NULL: receives the replay's own step records */
    void *record_ctx;
    /* 1: SIGINT and SIGTERM end the replay after the step under way (common/outputs.h's flag,
     * its handler installed again once SimGrid, which installs its own, has started); the
     * result then has fewer steps. 0: SimGrid's handling (a command-line run sets 1). */
    int interruptible;
    /* Progress on stderr (common/outputs.h's bar, as train draws it): steps done of the total,
     * simulated and wall time; 1 always, 0 never (the default), -1 when stderr is a terminal. */
    int progress;
} replay_opts;

replay_opts replay_opts_default(void);

typedef struct replay_result {
    policy_result res;       /* simulated time, sync steps, bytes, per-worker means */
    policy_config pc;        /* the configuration replayed */
    double wall_s;           /* wall time of the simulation (cluster set-up included) */
    double host_speed_flops; /* worker 0's host speed */
} replay_result;

/* The policy configuration a replay of `t` runs: the recorded one, with M workers, the compute
 * mode that reproduces the recorded costs, and o->coll when given. */
int replay_policy_config(const trace *t, const replay_opts *o, policy_config *pc);
/* Replays `t` (opens SimGrid: once per process). */
int replay_run(const trace *t, const replay_opts *o, replay_result *out);

#endif
