/* The `syncsim replay` and `syncsim trace` drivers (replay_command.h): trace-driven replay of a
 * recorded run, of a run synthesized from a model profile, or of a real cluster's log
 * (traces/FORMAT.md).
 *
 * Replay runs the policy actors of emulation unchanged, driven by the replay step source
 * (traces/replay.h): one SimGrid simulation in this process. Options that are not given come
 * from the trace (its policy, its platform settings, its network model); --platform, --workers,
 * --collective, --network-model and the generated-platform options override them. */
#include "traces/replay_command.h"
#include "sim/net/platform_check.h"
#include "sim/policy/policy_build.h"
#include "common/outputs.h"
#include "common/rng.h"
#include "common/status.h"
#include "common/summary.h"
#include "traces/profile.h"
#include "traces/replay.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A profile's replay, unless told: workers and steps (--workers 0, --steps 0). */
#define REPLAY_PROFILE_WORKERS 16
#define REPLAY_PROFILE_STEPS   100

static int options_given(const run_request *rq, const char *option) {
    return rq->was_set && rq->was_set(rq->cfg, option);
}

/* A setting given on the command line wins over the trace's recorded one, which wins over the
 * option's default. */
static const char *setting(const run_request *rq, const trace *t, const char *option,
                           const char *key, const char *given) {
    if (options_given(rq, option) || !t) return given;
    const char *v = trace_config_get(t, key);
    return v ? v : given;
}

/* The generated-platform options of a replay: given, else recorded, else defaults. */
static int generated_platform(const run_request *rq, const trace *t, platform_gen_spec *spec) {
    const run_config *cfg = rq->cfg;
    run_config gen = *cfg;
    snprintf(gen.bandwidth, sizeof gen.bandwidth, "%s",
             setting(rq, t, "bandwidth", "bandwidth", cfg->bandwidth));
    snprintf(gen.latency, sizeof gen.latency, "%s",
             setting(rq, t, "latency", "latency", cfg->latency));
    snprintf(gen.topology, sizeof gen.topology, "%s",
             setting(rq, t, "topology", "topology", cfg->topology));
    snprintf(gen.gpu, sizeof gen.gpu, "%s", setting(rq, t, "gpu", "gpu", cfg->gpu));
    const char *eff = t ? trace_config_get(t, "gpu-efficiency") : NULL;
    if (eff && !options_given(rq, "gpu-efficiency")) {
        char *end;
        gen.gpu_efficiency = strtod(eff, &end);
        if (end == eff || *end || !(gen.gpu_efficiency > 0) || gen.gpu_efficiency > 1)
            return ss_error_set(SS_EINPUT,
                                "the trace's config gpu-efficiency = %s is not in (0, 1]", eff);
    }
    return platform_spec_from_config(&gen, 1, 0, spec);
}

/* The platform of the replay: --platform, else the recorded platform file, else a generated
 * platform from the generated-platform options (given, else recorded, else defaults). */
static int resolve_platform(const run_request *rq, const trace *t, replay_opts *ro, char *path_buf,
                            size_t path_bytes) {
    const run_config *cfg = rq->cfg;
    int network_given = options_given(rq, "bandwidth") || options_given(rq, "latency") ||
                        options_given(rq, "topology");
    int generated_given = network_given || options_given(rq, "gpu");
    if (cfg->platform[0] && network_given)
        return ss_error_set(SS_EUSAGE, "--platform FILE contradicts --bandwidth, --latency and "
                                       "--topology, which describe a generated platform");
    if (cfg->platform[0] && options_given(rq, "gpu-efficiency") && !options_given(rq, "gpu"))
        return ss_error_set(SS_EUSAGE,
                            "--gpu-efficiency with --platform FILE needs --gpu: it is a fraction "
                            "of that GPU's peak FLOP/s (without --gpu the file's host speeds "
                            "are used as they are)");
    if (cfg->platform[0] && options_given(rq, "gpu")) {
        /* the platform gives the network, --gpu the compute speed of every worker */
        platform_gpu g;
        int rc = platform_parse_gpu("--gpu", cfg->gpu, &g);
        if (rc != SS_OK) return rc;
        ro->compute_speed_flops = platform_gpu_peak_flops(g) * cfg->gpu_efficiency;
        if ((rc = gpu_table_find("--gpu", cfg->gpu, &ro->compute_gpu)) != SS_OK) return rc;
    }
    const char *recorded = t ? trace_config_get(t, "platform") : NULL;
    if (cfg->platform[0] || (recorded && recorded[0] && !generated_given)) {
        snprintf(path_buf, path_bytes, "%s", cfg->platform[0] ? cfg->platform : recorded);
        ro->platform_path = path_buf;
        return SS_OK;
    }
    int rc = generated_platform(rq, t, &ro->gen);
    if (rc != SS_OK) return rc;
    ro->platform_path = NULL;
    return SS_OK;
}

/* --collective, --segment and --ps-servers given on the command line replace the recorded ones. */
static int apply_exchange_options(const run_request *rq, policy_config *pc) {
    const run_config *cfg = rq->cfg;
    if (options_given(rq, "collective")) {
        pc->use_ps = !strcmp(cfg->collective, "ps");
        if (!pc->use_ps) {
            int rc = sim_allreduce_algo_parse("--collective", cfg->collective, &pc->coll.algo);
            if (rc != SS_OK) return rc;
        }
    }
    if (options_given(rq, "segment")) pc->coll.segment_bytes = cfg->segment_bytes;
    if (options_given(rq, "ps-servers")) pc->ps_servers = cfg->ps_servers;
    /* overlap is not recorded: the command line's, or auto; a --comm-jitter given replaces the
     * recorded one (a what-if on a recorded run: the trace's own messages had none) */
    const char *overlap_opts[] = {"overlap", "bucket-mb", "comm-jitter"};
    for (int i = 0; i < 3; i++) {
        const policy_option *o = policy_option_find(overlap_opts[i]);
        int rc = options_given(rq, o->name)
                     ? policy_option_apply(o, policy_option_value(cfg, o->name), pc)
                     : SS_OK;
        if (rc != SS_OK) return rc;
    }
    return SS_OK;
}

/* The policy options of the command line, for a trace without one (profile, import). */
static int policy_from_options(const run_request *rq, policy_config *pc) {
    policy_build_env env = {.mode = POLICY_BUILD_REPLAY};
    return policy_config_build(rq->cfg, &env, pc);
}

/* SelSync from a profile: the decisions of a recorded trace, or seeded draws with probability
 * --sync-fraction; one of them is required (no default fraction: SelSync's LSSR depends on the
 * model, δ and the data). --steps defaults to the recorded trace's steps and may not exceed them:
 * starting the recorded sequence again would replay its warm-up in the middle of the run. */
static int selsync_steps(const run_request *rq, long *steps) {
    const run_config *cfg = rq->cfg;
    const int fraction = options_given(rq, "sync-fraction"), recorded = cfg->replay_decisions[0];
    if (fraction && recorded)
        return ss_error_set(SS_EUSAGE,
                            "--sync-fraction and --decisions exclude each other: the decisions "
                            "come either from the recorded trace or from seeded draws");
    if (!fraction && !recorded)
        return ss_error_set(SS_EUSAGE,
                            "replay --profile --policy selsync needs the steps' decisions: "
                            "--decisions TRACE (the steps.trace of a selsync run) or "
                            "--sync-fraction F (each step synchronizes with probability F, "
                            "1 - LSSR); there is no default, as SelSync's LSSR depends "
                            "on the model, delta and the data (docs/TRACES.md)");
    if (!recorded) return SS_OK;
    trace *rec;
    int rc = trace_load(cfg->replay_decisions, &rec);
    if (rc != SS_OK) return rc;
    const long n = rec->steps_done;
    trace_free(rec);
    if (n < 1)
        return ss_error_set(SS_EINPUT, "--decisions %s: no complete step recorded",
                            cfg->replay_decisions);
    if (cfg->replay_steps > n)
        return ss_error_set(SS_EUSAGE,
                            "--decisions %s records %ld complete steps, fewer than --steps %ld: "
                            "give --steps %ld or fewer (or leave --steps out to replay all %ld), "
                            "--sync-fraction F instead of --decisions, or a longer trace",
                            cfg->replay_decisions, n, cfg->replay_steps, n, n);
    if (cfg->replay_steps <= 0) *steps = n;
    return SS_OK;
}

static int synth_decisions(const run_config *cfg, long steps, int8_t **out) {
    int8_t *d = ss_malloc((size_t)steps);
    *out = d;
    if (cfg->replay_decisions[0]) {
        trace *rec;
        int rc = trace_load(cfg->replay_decisions, &rec);
        if (rc != SS_OK) return rc;
        /* selsync_steps checked the steps; the file may have changed since */
        const long n = rec->steps_done;
        if (n >= steps) memcpy(d, rec->decisions, (size_t)steps);
        trace_free(rec);
        return n >= steps
                   ? SS_OK
                   : ss_error_set(SS_EINPUT, "--decisions %s: changed while read (%ld steps)",
                                  cfg->replay_decisions, n);
    }
    rng r;
    rng_seed(&r, cfg->seed, RNG_STREAM_POLICY + 16);
    for (long s = 0; s < steps; s++)
        d[s] = rng_uniform(&r) < cfg->replay_sync_fraction;
    return SS_OK;
}

/* --sync-fraction and --decisions: for --profile --policy selsync only. */
static int selsync_options_only(const run_request *rq, const char *what) {
    if (options_given(rq, "sync-fraction") || rq->cfg->replay_decisions[0])
        return ss_error_set(SS_EUSAGE,
                            "--sync-fraction and --decisions are for --profile "
                            "--policy selsync; %s",
                            what);
    return SS_OK;
}

/* --compute and --precision time a profile's layers; a trace or a log replays its costs. */
static int no_compute_options(const run_request *rq, const char *what) {
    if (options_given(rq, "compute") || options_given(rq, "precision") ||
        options_given(rq, "framework"))
        return ss_error_set(SS_EUSAGE,
                            "--compute, --precision and --framework are for --profile; %s "
                            "replays its recorded costs",
                            what);
    return SS_OK;
}

/* --profile: --compute measured (the default for a profile with measured times: them, scaled),
 * model (the default where the profile has per-layer data, at --precision) or flops (FLOPs at
 * the host's speed; the default for a profile without per-layer data). */
static int profile_compute(const run_request *rq, const model_profile *prof, policy_config *pc) {
    const run_config *cfg = rq->cfg;
    const char *mode = options_given(rq, "compute") ? cfg->compute
                       : prof->measured             ? "measured"
                       : prof->layer_costs          ? "model"
                                                    : "flops";
    int rc = sim_compute_parse("--compute", mode, &pc->compute);
    if (rc != SS_OK) return rc;
    if (pc->compute.mode != SIM_COMPUTE_MODEL && pc->compute.mode != SIM_COMPUTE_FLOPS &&
        (pc->compute.mode != SIM_COMPUTE_MEASURED || !prof->measured))
        return ss_error_set(
            SS_EUSAGE, "--compute %s: a replay of a profile times it with model or flops%s",
            cfg->compute, prof->measured ? ", or measured[:SCALE] (its measured times)" : "");
    if (options_given(rq, "precision") && pc->compute.mode != SIM_COMPUTE_MODEL)
        return ss_error_set(SS_EUSAGE, "--precision applies to --compute model");
    if (options_given(rq, "framework") && pc->compute.mode != SIM_COMPUTE_MODEL)
        return ss_error_set(SS_EUSAGE, "--framework applies to --compute model");
    /* --precision (default pytorch), unless --compute model:PRECISION named one */
    if (pc->compute.mode == SIM_COMPUTE_MODEL && strncmp(mode, "model:", 6) != 0 &&
        (rc = sim_precision_parse("--precision", cfg->precision, &pc->compute.precision)) != SS_OK)
        return rc;
    return policy_compute_framework(cfg, pc);
}

/* --trace: the recorded trace, with the command line's exchange options. */
static int load_trace(const run_request *rq, trace **out) {
    const run_config *cfg = rq->cfg;
    int rc = selsync_options_only(rq, "a trace replays its recorded decisions");
    if (rc == SS_OK) rc = no_compute_options(rq, "a trace");
    if (rc == SS_OK) rc = trace_load(cfg->replay_trace, out);
    if (rc != SS_OK) return rc;
    trace *t = *out;
    if (options_given(rq, "batch"))
        return ss_error_set(SS_EUSAGE,
                            "--batch is for --profile and --import: the trace %s replays its "
                            "recorded steps (batch %d)",
                            cfg->replay_trace, t->pc.batch);
    if (cfg->policy[0] && strcmp(cfg->policy, policy_kind_name(t->pc.kind)))
        return ss_error_set(SS_EUSAGE, "--policy %s: the trace %s records policy %s", cfg->policy,
                            cfg->replay_trace, policy_kind_name(t->pc.kind));
    if (cfg->replay_steps > 0 && cfg->replay_steps < t->steps_done)
        t->steps_done = cfg->replay_steps;
    return apply_exchange_options(rq, &t->pc);
}

/* --import: a real log, with the model's size from --param-bytes or the profile. */
static int import_trace(const run_request *rq, const model_profile *prof, trace **out) {
    const run_config *cfg = rq->cfg;
    policy_config pc;
    int rc = no_compute_options(rq, "a log");
    if (rc == SS_OK) rc = selsync_options_only(rq, "a log replays its logged decisions");
    if (rc == SS_OK) rc = policy_from_options(rq, &pc);
    if (rc != SS_OK) return rc;
    double bytes = cfg->replay_param_bytes > 0 ? cfg->replay_param_bytes
                   : prof                      ? 4.0 * prof->params
                                               : 0;
    if ((rc = trace_import_csv(cfg->replay_import, &pc, bytes, out)) != SS_OK) return rc;
    trace *t = *out;
    /* a log with local steps is replayed as SelSync with the logged decisions */
    if (!cfg->policy[0] && trace_sync_fraction(t) < 1.0) t->pc.kind = POLICY_SELSYNC;
    if (prof) {
        snprintf(t->meta.model, sizeof t->meta.model, "%s", prof->name);
        t->meta.sample_bytes = prof->sample_bytes;
    }
    if (cfg->replay_steps > 0 && cfg->replay_steps < t->steps_done)
        t->steps_done = cfg->replay_steps;
    return SS_OK;
}

/* --profile: a run synthesized from the model profile under the command line's policy. */
static int synthesize_trace(const run_request *rq, const model_profile *prof, trace **out) {
    const run_config *cfg = rq->cfg;
    policy_config pc;
    int rc = policy_from_options(rq, &pc);
    if (rc == SS_OK) rc = profile_compute(rq, prof, &pc);
    if (rc != SS_OK) return rc;
    pc.workers = cfg->replay_workers > 0 ? cfg->replay_workers : REPLAY_PROFILE_WORKERS;
    pc.steps = cfg->replay_steps > 0 ? cfg->replay_steps : REPLAY_PROFILE_STEPS;
    if (!options_given(rq, "batch") && prof->batch > 0) pc.batch = prof->batch;
    if (pc.kind != POLICY_SELSYNC &&
        (rc = selsync_options_only(rq, "other policies decide their steps themselves")) != SS_OK)
        return rc;
    if (pc.kind == POLICY_SELSYNC && (rc = selsync_steps(rq, &pc.steps)) != SS_OK) return rc;
    pc.eval_every = pc.steps;
    int8_t *decisions = NULL;
    if (pc.kind == POLICY_SELSYNC && (rc = synth_decisions(cfg, pc.steps, &decisions)) != SS_OK) {
        free(decisions);
        return rc;
    }
    rc = profile_synthesize(prof, &pc, decisions, out);
    free(decisions);
    return rc;
}

/* A policy option given on the command line that the replayed policy does not take is refused, as
 * train refuses it, rather than ignored. */
static int options_apply(const run_request *rq, const trace *t) {
    const policy_info *p = policy_registry_find(policy_kind_name(t->pc.kind));
    for (int k = 0; p && k < policy_option_count(); k++) {
        const policy_option *o = policy_option_at(k);
        if ((o->replay & POLICY_OPTION_REPLAY) && options_given(rq, o->name) &&
            !policy_option_applies(o, p))
            return ss_error_set(SS_EUSAGE, "--%s does not apply to policy %s (the replayed one)",
                                o->name, p->name);
    }
    return SS_OK;
}

int replay_build_trace(const run_request *rq, trace **out) {
    const run_config *cfg = rq->cfg;
    *out = NULL;
    const int sources = (cfg->replay_trace[0] != 0) + (cfg->replay_import[0] != 0) +
                        (cfg->replay_profile[0] && !cfg->replay_import[0]);
    if (sources != 1)
        return ss_error_set(SS_EUSAGE, "replay needs one of --trace FILE, --profile NAME or "
                                       "--import CSV (with --import, --profile only gives the "
                                       "model size)");
    if (cfg->replay_trace[0]) {
        int rc = load_trace(rq, out);
        return rc == SS_OK ? options_apply(rq, *out) : rc;
    }
    model_profile prof;
    int have_profile = cfg->replay_profile[0] != 0;
    int rc;
    if (have_profile && (rc = profile_find(cfg->replay_profile, &prof)) != SS_OK) return rc;
    if (cfg->replay_import[0])
        rc = import_trace(rq, have_profile ? &prof : NULL, out);
    else
        rc = synthesize_trace(rq, &prof, out);
    if (have_profile) profile_free(&prof);
    return rc == SS_OK ? options_apply(rq, *out) : rc;
}

/* ---- syncsim replay ---- */

/* Everything one replay holds, released by replay_close(). */
typedef struct replay_cmd {
    const run_request *rq;
    const run_config *cfg;
    trace *t;
    replay_opts ro;
    policy_config pc;
    char platform[1024]; /* as printed: the given, recorded or generated platform file */
    char gen_path[1024];
    afile rec_file; /* --record: OUT/steps.trace of the replay itself */
    trace_writer tw;
    replay_result rr;
    int interrupted; /* SIGINT or SIGTERM ended the replay early */
} replay_cmd;

static void on_replay_record(void *ctx, const step_record *r) {
    trace_writer_record(&((replay_cmd *)ctx)->tw, r);
}

/* Where the batch of the replay comes from, for its header. */
static const char *batch_origin(const replay_cmd *c) {
    if (options_given(c->rq, "batch")) return "given";
    if (c->cfg->replay_trace[0]) return "recorded";
    if (c->cfg->replay_import[0]) return "default";
    model_profile prof;
    memset(&prof, 0, sizeof prof);
    int has_batch = profile_find(c->cfg->replay_profile, &prof) == SS_OK && prof.batch > 0;
    profile_free(&prof);
    return has_batch ? "the profile's" : "default: the profile gives none";
}

/* OUT/ with config.ini: the options given, and a profile's batch when it was not (a --config
 * re-run then replays the same batch even if the profile file changes). */
static int open_outputs(const replay_cmd *c) {
    const char *ini = c->rq->config_ini;
    char *text = NULL;
    if (c->cfg->replay_profile[0] && !c->cfg->replay_import[0] && !options_given(c->rq, "batch") &&
        ini) {
        size_t len = strlen(ini) + 64;
        text = ss_malloc(len);
        snprintf(text, len, "%sbatch = %d\n", ini, c->pc.batch);
        ini = text;
    }
    int rc = outputs_open_dir(c->cfg, ini);
    free(text);
    return rc;
}

/* Scale-out, network model, platform, the policy configuration; then OUT/ with config.ini. */
static int replay_setup(replay_cmd *c) {
    const run_config *cfg = c->cfg;
    const trace *t = c->t;
    replay_opts *ro = &c->ro;
    *ro = replay_opts_default();
    ro->workers = cfg->replay_workers > 0 ? cfg->replay_workers : t->pc.workers;
    ro->seed = cfg->seed;
    int rc;
    if ((rc = replay_scale_out_parse("--scale-out", cfg->replay_scale_out, &ro->scale_out)))
        return rc;
    const char *model = setting(c->rq, t, "network-model", "network-model", cfg->network_model);
    if ((rc = sim_network_model_parse("--network-model", model, &ro->model)) != SS_OK) return rc;
    if ((rc = resolve_platform(c->rq, t, ro, c->platform, sizeof c->platform)) != SS_OK) return rc;
    /* every check before OUT is touched: a given platform file, and the policy's configuration */
    if (ro->platform_path) {
        sim_platform_info info;
        if ((rc = sim_platform_check(ro->platform_path, &info)) != SS_OK) return rc;
        sim_platform_info_free(&info);
    }
    if ((rc = replay_policy_config(t, ro, &c->pc)) != SS_OK) return rc;
    if ((rc = open_outputs(c)) != SS_OK) return rc;
    if (!ro->platform_path) {
        outputs_path(cfg, "platform.xml", c->gen_path, sizeof c->gen_path);
        ro->gen_path = c->gen_path;
        snprintf(c->platform, sizeof c->platform, "%s", c->gen_path);
    }
    return SS_OK;
}

/* --record: OUT/steps.trace of the replay, its header the recorded configuration lines and then
 * the cluster this replay ran on (the last line wins). */
static int open_record(replay_cmd *c) {
    const run_config *cfg = c->cfg;
    char path[1024];
    outputs_path(cfg, "steps.trace", path, sizeof path);
    int rc = afile_open(&c->rec_file, path);
    if (rc != SS_OK) return rc;
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    SS_ASSERT(mem);
    for (int i = 0; i < c->t->n_config; i++)
        fprintf(mem, "%s = %s\n", c->t->config[i].key, c->t->config[i].value);
    fprintf(mem, "platform = %s\n", c->ro.gen_path ? "" : c->platform);
    static const char *const keys[] = {"bandwidth", "latency", "topology", "gpu", "network-model"};
    const char *given[] = {cfg->bandwidth, cfg->latency, cfg->topology, cfg->gpu,
                           cfg->network_model};
    for (int i = 0; i < 5; i++)
        fprintf(mem, "%s = %s\n", keys[i], setting(c->rq, c->t, keys[i], keys[i], given[i]));
    fprintf(mem, "gpu-efficiency = %.17g\n", c->ro.gen.efficiency);
    fclose(mem);
    trace_meta meta = c->t->meta;
    snprintf(meta.source, sizeof meta.source, "replay");
    trace_writer_begin(&c->tw, c->rec_file.fp, &meta, &c->pc, text);
    free(text);
    c->ro.record = on_replay_record;
    c->ro.record_ctx = c;
    return SS_OK;
}

static void summarize(const replay_cmd *c, run_summary *s) {
    const trace *t = c->t;
    const policy_result *res = &c->rr.res;
    run_summary_init(s);
    snprintf(s->status, sizeof s->status, "%s", c->interrupted ? "interrupted" : "ok");
    snprintf(s->mode, sizeof s->mode, "replay");
    snprintf(s->source, sizeof s->source, "%s", t->meta.source);
    snprintf(s->model, sizeof s->model, "%s", t->meta.model);
    snprintf(s->policy, sizeof s->policy, "%s", policy_kind_name(c->rr.pc.kind));
    s->workers = c->rr.pc.workers;
    s->batch = c->rr.pc.batch;
    policy_describe_exchange(&c->rr.pc, s->collective, sizeof s->collective);
    if (c->rr.pc.compute.mode == SIM_COMPUTE_MODEL) {
        snprintf(s->precision, sizeof s->precision, "%s",
                 sim_precision_name(c->rr.pc.compute.precision));
        snprintf(s->framework, sizeof s->framework, "%s",
                 sim_framework_name(c->rr.pc.compute.framework));
    }
    s->recorded_workers = t->workers;
    snprintf(s->scale_out, sizeof s->scale_out, "%s", replay_scale_out_name(c->ro.scale_out));
    snprintf(s->platform, sizeof s->platform, "%s", c->platform);
    s->sim_time_s = res->sim_time_s;
    if (t->sim_time_s >= 0) {
        s->recorded_sim_time_s = t->sim_time_s;
        if (!c->interrupted) /* part of the run against all of it: no comparison */
            s->relative_difference =
                t->sim_time_s > 0 ? (res->sim_time_s - t->sim_time_s) / t->sim_time_s : 0;
    }
    s->steps = res->steps;
    s->sync_steps = res->sync_steps;
    s->lssr = res->lssr;
    s->bytes_sent = res->bytes_sent;
    s->compute_s = res->compute_s;
    s->comm_s = res->comm_s;
    s->wait_s = res->wait_s;
    s->param_bytes = t->meta.param_bytes;
    s->seed = c->ro.seed;
    s->wall_s = c->rr.wall_s;
    if (policy_is_async(&c->rr.pc))
        run_summary_set_staleness(s, res->clock_gap_hist, res->update_staleness_hist,
                                  POLICY_STALENESS_BINS, res->max_clock_gap,
                                  res->max_update_staleness);
}

static void print_result(const replay_cmd *c) {
    const run_request *rq = c->rq;
    const trace *t = c->t;
    const replay_result *rr = &c->rr;
    if (c->interrupted) printf("interrupted after step %ld of %ld: ", rr->res.steps, rr->pc.steps);
    printf("simulated time %.9g s (compute %.6g, comm %.6g, wait %.6g per worker), %ld of %ld "
           "steps synchronized (LSSR %.3f), %.4g GB sent; wall %.2f s\n",
           rr->res.sim_time_s, rr->res.compute_s, rr->res.comm_s, rr->res.wait_s,
           rr->res.sync_steps, rr->res.steps, rr->res.lssr, rr->res.bytes_sent / 1e9, rr->wall_s);
    /* the same run on the same cluster must take the same simulated time */
    static const char *const changes[] = {"platform", "bandwidth",     "latency",    "topology",
                                          "gpu",      "network-model", "collective", "steps"};
    int same_run = rr->pc.workers == t->pc.workers;
    for (int i = 0; i < 8; i++)
        same_run = same_run && !options_given(rq, changes[i]);
    /* an interrupted replay ran part of the run: no comparison with the whole */
    const int recorded = t->sim_time_s >= 0 && !c->interrupted;
    if (recorded && same_run)
        printf("recorded simulated time %.9g s: relative difference %.3g\n", t->sim_time_s,
               t->sim_time_s > 0 ? (rr->res.sim_time_s - t->sim_time_s) / t->sim_time_s : 0.0);
    else if (recorded)
        printf("recorded simulated time %.9g s (on the recorded cluster and workers)\n",
               t->sim_time_s);
    printf("outputs: %s/{config.ini,%s%ssummary.json}\n", c->cfg->out_dir,
           c->ro.gen_path ? "platform.xml," : "", c->cfg->replay_record ? "steps.trace," : "");
}

static int replay_simulate(replay_cmd *c) {
    const trace *t = c->t;
    printf("syncsim replay: %s trace%s%s, %s, %d workers (%d recorded, %s), %ld steps, "
           "batch %d (%s), platform %s\n",
           t->meta.source, t->meta.model[0] ? " of " : "", t->meta.model,
           policy_kind_name(c->pc.kind), c->pc.workers, t->workers,
           replay_scale_out_name(c->ro.scale_out), c->pc.steps, c->pc.batch, batch_origin(c),
           c->platform);
    if (c->pc.compute.mode == SIM_COMPUTE_MODEL)
        printf("compute: the per-layer model on %s, precision %s, framework %s\n", c->cfg->gpu,
               sim_precision_name(c->pc.compute.precision),
               sim_framework_name(c->pc.compute.framework));
    if (c->pc.kind == POLICY_SELSYNC && c->cfg->replay_profile[0] && !c->cfg->replay_import[0]) {
        if (c->cfg->replay_decisions[0])
            printf("selsync decisions: the first %ld steps recorded in %s (sync fraction %.4f)\n",
                   c->pc.steps, c->cfg->replay_decisions, trace_sync_fraction(t));
        else
            printf("selsync decisions: each step synchronizes with probability %g "
                   "(--sync-fraction, draws seeded by --seed %llu): sync fraction %.4f\n",
                   c->cfg->replay_sync_fraction, (unsigned long long)c->cfg->seed,
                   trace_sync_fraction(t));
    }
    fflush(stdout);
    c->ro.interruptible = 1;
    c->ro.progress = c->cfg->progress;
    int rc = replay_run(t, &c->ro, &c->rr);
    if (rc != SS_OK) return rc;
    c->interrupted = outputs_interrupted();
    /* interrupted too: the record holds the steps replayed, and ends with its end line */
    if (c->rec_file.fp) {
        trace_writer_end(&c->tw, c->rr.res.sim_time_s);
        if ((rc = afile_commit(&c->rec_file)) != SS_OK) return rc;
    }
    run_summary sum;
    summarize(c, &sum);
    if (summary_write(c->cfg, &sum) != SS_OK) fprintf(stderr, "syncsim: %s\n", ss_error_message());
    print_result(c);
    return c->interrupted ? SS_EINTERRUPT : SS_OK;
}

int replay_command(const run_request *rq) {
    replay_cmd c;
    memset(&c, 0, sizeof c);
    c.rq = rq;
    c.cfg = rq->cfg;
    /* from the start, so that a signal while the trace loads is not lost (replay_run installs
     * the handler again once SimGrid has put its own) */
    outputs_install_interrupt_handler();
    int rc = replay_build_trace(rq, &c.t);
    if (rc == SS_OK) rc = replay_setup(&c);
    if (rc == SS_OK && c.cfg->replay_record) rc = open_record(&c);
    if (rc == SS_OK && outputs_interrupted()) {
        fprintf(stderr, "syncsim: interrupted before the replay started\n");
        rc = SS_EINTERRUPT;
    }
    if (rc == SS_OK) rc = replay_simulate(&c);
    if (c.rec_file.fp) afile_abort(&c.rec_file);
    trace_free(c.t);
    return rc;
}

/* ---- syncsim trace ---- */

void replay_trace_describe(const trace *t, const char *name, FILE *out) {
    double compute = 0, flops = 0;
    long cells = 0;
    for (long s = 1; s <= t->steps; s++)
        for (int w = 0; w < t->workers; w++) {
            const trace_cell *c = trace_cell_at(t, s, w);
            if (!c->recorded) continue;
            compute += c->compute_s;
            flops += c->flops;
            cells++;
        }
    fprintf(out, "%s: syncsim trace version %d, source %s%s%s\n", name, t->version, t->meta.source,
            t->meta.model[0] ? ", model " : "", t->meta.model);
    fprintf(out, "  policy %s, %d workers, %ld steps planned, %ld complete, %ld records\n",
            policy_kind_name(t->pc.kind), t->workers, t->pc.steps, t->steps_done, t->records);
    char compute_mode[64];
    sim_compute_format(&t->pc.compute, compute_mode, sizeof compute_mode);
    fprintf(out, "  exchange %.6g bytes (%.6g parameters), compute mode %s, seed %llu\n",
            t->meta.param_bytes, t->meta.param_count, compute_mode, (unsigned long long)t->pc.seed);
    fprintf(out, "  mean compute %.6g s and %.6g FLOPs per worker step; sync fraction %.4f\n",
            cells ? compute / (double)cells : 0.0, cells ? flops / (double)cells : 0.0,
            trace_sync_fraction(t));
    if (t->sim_time_s >= 0) fprintf(out, "  recorded simulated time %.9g s\n", t->sim_time_s);
}

int replay_trace_save(const trace *t, const char *path) {
    afile f;
    int rc = afile_open(&f, path);
    if (rc != SS_OK) return rc;
    trace_writer tw;
    trace_writer_begin(&tw, f.fp, &t->meta, &t->pc, NULL);
    for (long s = 1; s <= t->steps; s++)
        for (int w = 0; w < t->workers; w++) {
            const trace_cell *c = trace_cell_at(t, s, w);
            if (!c->recorded) continue;
            step_record r = {.step = s,
                             .worker = w,
                             .compute_s = c->compute_s,
                             .comm_s = c->comm_s,
                             .flops = c->flops,
                             .grad_norm = c->grad_norm,
                             .decision = c->decision,
                             .samples = c->samples,
                             .loss = c->loss};
            trace_writer_record(&tw, &r);
        }
    trace_writer_end(&tw, -1);
    return afile_commit(&f);
}
