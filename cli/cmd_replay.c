/* syncsim replay, syncsim trace and syncsim bench replay: trace-driven replay of a recorded run,
 * of a run synthesized from a model profile, or of a real cluster's log (traces/FORMAT.md).
 *
 * Replay runs the policy actors of emulation unchanged, driven by the replay step source
 * (traces/replay.h): one SimGrid simulation in this process. Options that are not given come
 * from the trace (its policy, its platform settings, its network model); --platform, --workers,
 * --collective, --network-model and the generated-platform options override them. */
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/outputs.h"
#include "cli/commands.h"
#include "common/rng.h"
#include "common/status.h"
#include "sim/bench_network.h"
#include "sim/isolate.h"
#include "traces/profile.h"
#include "traces/replay.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A setting given on the command line wins over the trace's recorded one, which wins over the
 * option's default. */
static const char *setting(const run_config *cfg, const trace *t, const char *option,
                           const char *key, const char *given) {
    if (options_was_set(cfg, option) || !t) return given;
    const char *v = trace_config_get(t, key);
    return v ? v : given;
}

/* The platform of the replay: --platform, else the recorded platform file, else a generated
 * platform from the generated-platform options (given, else recorded, else defaults). */
static int resolve_platform(const run_config *cfg, const trace *t, replay_opts *ro, char *path_buf,
                            size_t path_bytes) {
    int network_given = options_was_set(cfg, "bandwidth") || options_was_set(cfg, "latency") ||
                        options_was_set(cfg, "topology");
    int generated_given = network_given || options_was_set(cfg, "gpu");
    if (cfg->platform[0] && network_given)
        return ss_error_set(SS_EUSAGE, "--platform FILE contradicts --bandwidth, --latency and "
                                       "--topology, which describe a generated platform");
    if (cfg->platform[0] && options_was_set(cfg, "gpu")) {
        /* the platform gives the network, --gpu the compute speed of every worker */
        platform_gpu g;
        int rc = platform_parse_gpu("--gpu", cfg->gpu, &g);
        if (rc != SS_OK) return rc;
        ro->compute_speed_flops = platform_gpu_peak_flops(g) * cfg->gpu_efficiency;
    }
    const char *recorded = t ? trace_config_get(t, "platform") : NULL;
    if (cfg->platform[0] || (recorded && recorded[0] && !generated_given)) {
        snprintf(path_buf, path_bytes, "%s", cfg->platform[0] ? cfg->platform : recorded);
        ro->platform_path = path_buf;
        return SS_OK;
    }
    /* the generated-platform options: given, else recorded, else defaults */
    run_config gen = *cfg;
    snprintf(gen.bandwidth, sizeof gen.bandwidth, "%s",
             setting(cfg, t, "bandwidth", "bandwidth", cfg->bandwidth));
    snprintf(gen.latency, sizeof gen.latency, "%s",
             setting(cfg, t, "latency", "latency", cfg->latency));
    snprintf(gen.topology, sizeof gen.topology, "%s",
             setting(cfg, t, "topology", "topology", cfg->topology));
    snprintf(gen.gpu, sizeof gen.gpu, "%s", setting(cfg, t, "gpu", "gpu", cfg->gpu));
    const char *eff = t ? trace_config_get(t, "gpu-efficiency") : NULL;
    if (eff && !options_was_set(cfg, "gpu-efficiency")) {
        char *end;
        gen.gpu_efficiency = strtod(eff, &end);
        if (end == eff || *end || !(gen.gpu_efficiency > 0) || gen.gpu_efficiency > 1)
            return ss_error_set(SS_EINPUT,
                                "the trace's config gpu-efficiency = %s is not in (0, 1]", eff);
    }
    int rc = platform_spec_from_config(&gen, 1, 0, &ro->gen);
    if (rc != SS_OK) return rc;
    ro->platform_path = NULL;
    return SS_OK;
}

/* --collective, --segment and --ps-servers given on the command line replace the recorded ones. */
static int apply_exchange_options(const run_config *cfg, policy_config *pc) {
    if (options_was_set(cfg, "collective")) {
        pc->use_ps = !strcmp(cfg->collective, "ps");
        if (!pc->use_ps) {
            int rc = sim_allreduce_algo_parse("--collective", cfg->collective, &pc->coll.algo);
            if (rc != SS_OK) return rc;
        }
    }
    if (options_was_set(cfg, "segment")) pc->coll.segment_bytes = cfg->segment_bytes;
    if (options_was_set(cfg, "ps-servers")) pc->ps_servers = cfg->ps_servers;
    return SS_OK;
}

/* The policy options of the command line, for a trace without one (profile, import). */
static int policy_from_options(const run_config *cfg, policy_kind fallback, policy_config *pc) {
    policy_config_default(pc);
    pc->kind = fallback;
    int rc;
    if (cfg->policy[0] && (rc = policy_kind_parse(cfg->policy, &pc->kind)) != SS_OK) return rc;
    pc->batch = cfg->batch;
    pc->seed = cfg->seed;
    pc->staleness = cfg->staleness;
    pc->local_steps = cfg->local_steps;
    pc->client_fraction = cfg->client_fraction;
    pc->post_local_after = cfg->post_local_after;
    pc->ps_servers = cfg->ps_servers;
    pc->coll.algo = SIM_ALLREDUCE_RING;
    return apply_exchange_options(cfg, pc);
}

/* SelSync from a profile: the decisions of a recorded trace (repeated if shorter), or seeded
 * draws with probability --sync-fraction. */
static int synth_decisions(const run_config *cfg, long steps, int8_t **out) {
    int8_t *d = ss_malloc((size_t)steps);
    *out = d;
    if (cfg->replay_decisions[0]) {
        trace *rec;
        int rc = trace_load(cfg->replay_decisions, &rec);
        if (rc != SS_OK) return rc;
        long n = rec->steps_done;
        if (n < 1) {
            trace_free(rec);
            return ss_error_set(SS_EINPUT, "--decisions %s: no complete step recorded",
                                cfg->replay_decisions);
        }
        for (long s = 0; s < steps; s++)
            d[s] = rec->decisions[s % n];
        trace_free(rec);
        return SS_OK;
    }
    rng r;
    rng_seed(&r, cfg->seed, RNG_STREAM_POLICY + 16);
    for (long s = 0; s < steps; s++)
        d[s] = rng_uniform(&r) < cfg->replay_sync_fraction;
    return SS_OK;
}

/* The trace the options describe: loaded, synthesized or imported. */
static int build_trace(const run_config *cfg, trace **out) {
    *out = NULL;
    const int sources = (cfg->replay_trace[0] != 0) + (cfg->replay_import[0] != 0) +
                        (cfg->replay_profile[0] && !cfg->replay_import[0]);
    if (sources != 1)
        return ss_error_set(SS_EUSAGE, "replay needs one of --trace FILE, --profile NAME or "
                                       "--import CSV (with --import, --profile only gives the "
                                       "model size)");
    int rc;
    if (cfg->replay_trace[0]) {
        if (options_was_set(cfg, "sync-fraction") || cfg->replay_decisions[0])
            return ss_error_set(SS_EUSAGE, "--sync-fraction and --decisions are for --profile; a "
                                           "trace replays its recorded decisions");
        if ((rc = trace_load(cfg->replay_trace, out)) != SS_OK) return rc;
        trace *t = *out;
        if (cfg->policy[0] && strcmp(cfg->policy, policy_kind_name(t->pc.kind)))
            return ss_error_set(SS_EUSAGE, "--policy %s: the trace %s records policy %s",
                                cfg->policy, cfg->replay_trace, policy_kind_name(t->pc.kind));
        if (cfg->replay_steps > 0 && cfg->replay_steps < t->steps_done)
            t->steps_done = cfg->replay_steps;
        return apply_exchange_options(cfg, &t->pc);
    }
    model_profile prof;
    int have_profile = cfg->replay_profile[0] != 0;
    if (have_profile && (rc = profile_find(cfg->replay_profile, &prof)) != SS_OK) return rc;
    policy_config pc;
    if (cfg->replay_import[0]) {
        if ((rc = policy_from_options(cfg, POLICY_BSP, &pc)) != SS_OK) return rc;
        double bytes = cfg->replay_param_bytes > 0 ? cfg->replay_param_bytes
                       : have_profile              ? 4.0 * prof.params
                                                   : 0;
        if ((rc = trace_import_csv(cfg->replay_import, &pc, bytes, out)) != SS_OK) return rc;
        trace *t = *out;
        /* a log with local steps is replayed as SelSync with the logged decisions */
        if (!cfg->policy[0] && trace_sync_fraction(t) < 1.0) t->pc.kind = POLICY_SELSYNC;
        if (have_profile) {
            snprintf(t->meta.model, sizeof t->meta.model, "%s", prof.name);
            t->meta.sample_bytes = prof.sample_bytes;
        }
        if (cfg->replay_steps > 0 && cfg->replay_steps < t->steps_done)
            t->steps_done = cfg->replay_steps;
        return SS_OK;
    }
    if ((rc = policy_from_options(cfg, POLICY_BSP, &pc)) != SS_OK) return rc;
    pc.workers = cfg->replay_workers > 0 ? cfg->replay_workers : 16;
    pc.steps = cfg->replay_steps > 0 ? cfg->replay_steps : 100;
    if (!options_was_set(cfg, "batch") && prof.batch > 0) pc.batch = prof.batch;
    pc.eval_every = pc.steps;
    int8_t *decisions = NULL;
    if (pc.kind == POLICY_SELSYNC && (rc = synth_decisions(cfg, pc.steps, &decisions)) != SS_OK) {
        free(decisions);
        return rc;
    }
    rc = profile_synthesize(&prof, &pc, decisions, out);
    free(decisions);
    return rc;
}

/* ---- the replay's own trace (--record) ---- */

typedef struct record_ctx {
    trace_writer tw;
} record_ctx;

static void on_replay_record(void *ctx, const step_record *r) {
    trace_writer_record(&((record_ctx *)ctx)->tw, r);
}

static void write_config_lines(const trace *t, FILE *mem) {
    for (int i = 0; i < t->n_config; i++)
        fprintf(mem, "%s = %s\n", t->config[i].key, t->config[i].value);
}

static void write_summary(const run_config *cfg, const trace *t, const replay_opts *ro,
                          const replay_result *rr, const char *platform) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "status", "ok");
    cJSON_AddStringToObject(j, "mode", "replay");
    cJSON_AddStringToObject(j, "source", t->meta.source);
    cJSON_AddStringToObject(j, "model", t->meta.model);
    cJSON_AddStringToObject(j, "policy", policy_kind_name(rr->pc.kind));
    cJSON_AddNumberToObject(j, "workers", rr->pc.workers);
    cJSON_AddNumberToObject(j, "recorded_workers", t->workers);
    cJSON_AddStringToObject(j, "scale_out", replay_scale_out_name(ro->scale_out));
    cJSON_AddStringToObject(j, "platform", platform);
    cJSON_AddNumberToObject(j, "sim_time_s", rr->res.sim_time_s);
    if (t->sim_time_s >= 0) {
        cJSON_AddNumberToObject(j, "recorded_sim_time_s", t->sim_time_s);
        cJSON_AddNumberToObject(
            j, "relative_difference",
            t->sim_time_s > 0 ? (rr->res.sim_time_s - t->sim_time_s) / t->sim_time_s : 0);
    }
    cJSON_AddNumberToObject(j, "steps", (double)rr->res.steps);
    cJSON_AddNumberToObject(j, "sync_steps", (double)rr->res.sync_steps);
    cJSON_AddNumberToObject(j, "lssr", rr->res.lssr);
    cJSON_AddNumberToObject(j, "bytes_sent", rr->res.bytes_sent);
    cJSON_AddNumberToObject(j, "compute_s", rr->res.compute_s);
    cJSON_AddNumberToObject(j, "comm_s", rr->res.comm_s);
    cJSON_AddNumberToObject(j, "wait_s", rr->res.wait_s);
    cJSON_AddNumberToObject(j, "param_bytes", t->meta.param_bytes);
    cJSON_AddNumberToObject(j, "seed", (double)ro->seed);
    cJSON_AddNumberToObject(j, "wall_s", rr->wall_s);
    int rc = outputs_write_json(cfg, "summary.json", j);
    if (rc != SS_OK) fprintf(stderr, "syncsim: %s\n", ss_error_message());
    cJSON_Delete(j);
}

int cmd_replay(const run_config *cfg) {
    trace *t = NULL;
    int rc = build_trace(cfg, &t);
    if (rc != SS_OK) goto done;
    replay_opts ro = replay_opts_default();
    ro.workers = cfg->replay_workers > 0 ? cfg->replay_workers : t->pc.workers;
    ro.seed = cfg->seed;
    if ((rc = replay_scale_out_parse("--scale-out", cfg->replay_scale_out, &ro.scale_out)))
        goto done;
    const char *model = setting(cfg, t, "network-model", "network-model", cfg->network_model);
    if ((rc = sim_network_model_parse("--network-model", model, &ro.model)) != SS_OK) goto done;
    char platform[1024], gen_path[1024];
    if ((rc = resolve_platform(cfg, t, &ro, platform, sizeof platform)) != SS_OK) goto done;
    if ((rc = outputs_begin(CMD_REPLAY, cfg)) != SS_OK) goto done;
    if (!ro.platform_path) {
        outputs_path(cfg, "platform.xml", gen_path, sizeof gen_path);
        ro.gen_path = gen_path;
        snprintf(platform, sizeof platform, "%s", gen_path);
    }
    policy_config pc;
    if ((rc = replay_policy_config(t, &ro, &pc)) != SS_OK) goto done;

    afile rec_file = {0};
    record_ctx rec;
    if (cfg->replay_record) {
        char path[1024];
        outputs_path(cfg, "steps.trace", path, sizeof path);
        if ((rc = afile_open(&rec_file, path)) != SS_OK) goto done;
        char *text = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&text, &len);
        SS_ASSERT(mem);
        write_config_lines(t, mem);
        /* the cluster this replay ran on, after the recorded lines (the last line wins) */
        fprintf(mem, "platform = %s\n", ro.gen_path ? "" : platform);
        static const char *const keys[] = {"bandwidth", "latency", "topology", "gpu",
                                           "network-model"};
        const char *given[] = {cfg->bandwidth, cfg->latency, cfg->topology, cfg->gpu,
                               cfg->network_model};
        for (int i = 0; i < 5; i++)
            fprintf(mem, "%s = %s\n", keys[i], setting(cfg, t, keys[i], keys[i], given[i]));
        fprintf(mem, "gpu-efficiency = %.17g\n", ro.gen.efficiency);
        fclose(mem);
        trace_meta meta = t->meta;
        snprintf(meta.source, sizeof meta.source, "replay");
        trace_writer_begin(&rec.tw, rec_file.fp, &meta, &pc, text);
        free(text);
        ro.record = on_replay_record;
        ro.record_ctx = &rec;
    }

    printf("syncsim replay: %s trace%s%s, %s, %d workers (%d recorded, %s), %ld steps, "
           "platform %s\n",
           t->meta.source, t->meta.model[0] ? " of " : "", t->meta.model, policy_kind_name(pc.kind),
           pc.workers, t->workers, replay_scale_out_name(ro.scale_out), pc.steps, platform);
    fflush(stdout);
    replay_result rr;
    rc = replay_run(t, &ro, &rr);
    if (rc != SS_OK) {
        if (rec_file.fp) afile_abort(&rec_file);
        goto done;
    }
    if (rec_file.fp) {
        trace_writer_end(&rec.tw, rr.res.sim_time_s);
        if ((rc = afile_commit(&rec_file)) != SS_OK) goto done;
    }
    write_summary(cfg, t, &ro, &rr, platform);
    printf("simulated time %.9g s (compute %.6g, comm %.6g, wait %.6g per worker), %ld of %ld "
           "steps synchronized (LSSR %.3f), %.4g GB sent; wall %.2f s\n",
           rr.res.sim_time_s, rr.res.compute_s, rr.res.comm_s, rr.res.wait_s, rr.res.sync_steps,
           rr.res.steps, rr.res.lssr, rr.res.bytes_sent / 1e9, rr.wall_s);
    /* the same run on the same cluster must take the same simulated time */
    const int same_run = rr.pc.workers == t->pc.workers && !options_was_set(cfg, "platform") &&
                         !options_was_set(cfg, "bandwidth") && !options_was_set(cfg, "latency") &&
                         !options_was_set(cfg, "topology") && !options_was_set(cfg, "gpu") &&
                         !options_was_set(cfg, "network-model") &&
                         !options_was_set(cfg, "collective") && !options_was_set(cfg, "steps");
    if (t->sim_time_s >= 0 && same_run)
        printf("recorded simulated time %.9g s: relative difference %.3g\n", t->sim_time_s,
               t->sim_time_s > 0 ? (rr.res.sim_time_s - t->sim_time_s) / t->sim_time_s : 0.0);
    else if (t->sim_time_s >= 0)
        printf("recorded simulated time %.9g s (on the recorded cluster and workers)\n",
               t->sim_time_s);
    printf("outputs: %s/{config.ini,%s%ssummary.json}\n", cfg->out_dir,
           ro.gen_path ? "platform.xml," : "", cfg->replay_record ? "steps.trace," : "");
done:
    trace_free(t);
    return rc;
}

/* ---- syncsim trace: check a trace, or convert a real log into one ---- */

int cmd_trace(const run_config *cfg) {
    trace *t = NULL;
    int rc;
    if (!cfg->replay_trace[0] && !cfg->replay_import[0])
        return ss_error_set(SS_EUSAGE, "trace needs --trace FILE (check and summarize it) or "
                                       "--import CSV (convert a real log into OUT/steps.trace)");
    if ((rc = build_trace(cfg, &t)) != SS_OK) {
        trace_free(t);
        return rc;
    }
    const char *name = cfg->replay_trace[0] ? cfg->replay_trace : cfg->replay_import;
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
    printf("%s: syncsim trace version %d, source %s%s%s\n", name, t->version, t->meta.source,
           t->meta.model[0] ? ", model " : "", t->meta.model);
    printf("  policy %s, %d workers, %ld steps planned, %ld complete, %ld records\n",
           policy_kind_name(t->pc.kind), t->workers, t->pc.steps, t->steps_done, t->records);
    char compute_mode[64];
    sim_compute_format(&t->pc.compute, compute_mode, sizeof compute_mode);
    printf("  exchange %.6g bytes (%.6g parameters), compute mode %s, seed %llu\n",
           t->meta.param_bytes, t->meta.param_count, compute_mode, (unsigned long long)t->pc.seed);
    printf("  mean compute %.6g s and %.6g FLOPs per worker step; sync fraction %.4f\n",
           cells ? compute / (double)cells : 0.0, cells ? flops / (double)cells : 0.0,
           trace_sync_fraction(t));
    if (t->sim_time_s >= 0) printf("  recorded simulated time %.9g s\n", t->sim_time_s);
    if (cfg->replay_import[0]) {
        /* write the imported log as a trace file */
        if ((rc = ss_mkdir_p(cfg->out_dir)) != SS_OK) goto done;
        char path[1024];
        outputs_path(cfg, "steps.trace", path, sizeof path);
        afile f;
        if ((rc = afile_open(&f, path)) != SS_OK) goto done;
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
        if ((rc = afile_commit(&f)) != SS_OK) goto done;
        printf("wrote %s\n", path);
    }
done:
    trace_free(t);
    return rc;
}

/* ---- syncsim bench replay ---- */

typedef struct bench_case {
    const trace *t;
    replay_opts ro;
} bench_case;

static int bench_child(void *arg, sim_blob *out) {
    bench_case *bc = arg;
    replay_result rr;
    int rc = replay_run(bc->t, &bc->ro, &rr);
    if (rc == SS_OK) sim_blob_append(out, &rr, sizeof rr);
    return rc;
}

static int bench_one(const trace *t, int workers, sim_allreduce_algo algo, sim_network_model model,
                     replay_result *rr) {
    bench_case bc = {t, replay_opts_default()};
    bc.ro.workers = workers;
    bc.ro.model = model;
    sim_coll_opts co = {.algo = algo, .segment_bytes = 0};
    bc.ro.coll = &co;
    sim_blob b = {0};
    int rc = sim_run_isolated(bench_child, &bc, &b);
    if (rc == SS_OK && b.bytes == sizeof *rr) memcpy(rr, b.data, sizeof *rr);
    sim_blob_free(&b);
    return rc;
}

/* SMPI's all-reduce of the same bytes, through `bench network`'s table (one row per size). */
static int smpi_allreduce(const run_config *cfg, double bytes, const int *sizes, int n,
                          double *smpi_s, double *smpi_wall_s) {
    bench_network_opts o = bench_network_default();
    o.bytes = 4.0 * floor(bytes / 4.0);
    o.n_sizes = n;
    for (int i = 0; i < n; i++)
        o.hosts[i] = sizes[i];
    o.max_smpi_hosts = cfg->max_smpi_hosts;
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    SS_ASSERT(mem);
    int rc = bench_network(&o, mem);
    fclose(mem);
    for (int i = 0; i < n; i++)
        smpi_s[i] = smpi_wall_s[i] = NAN;
    if (rc == SS_OK) {
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
            int hosts;
            double ring_s, ring_w, coarse_s, coarse_w, s, w;
            if (sscanf(line, "%d %lf %lf %lf %lf %lf %lf", &hosts, &ring_s, &ring_w, &coarse_s,
                       &coarse_w, &s, &w) != 7)
                continue;
            for (int i = 0; i < n; i++)
                if (sizes[i] == hosts) smpi_s[i] = s, smpi_wall_s[i] = w;
        }
    }
    free(text);
    return rc;
}

int cmd_bench_replay(const run_config *cfg) {
    model_profile prof;
    int rc = profile_find(cfg->replay_profile[0] ? cfg->replay_profile : "resnet101", &prof);
    if (rc != SS_OK) return rc;
    int sizes[BENCH_NETWORK_MAX_SIZES], n_sizes = 0;
    char list[RUN_CONFIG_TEXT];
    snprintf(list, sizeof list, "%s",
             options_was_set(cfg, "sizes") ? cfg->bench_hosts : "1024,4096,65536");
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        char *end;
        long v = strtol(tok, &end, 10);
        if (*end || v < 2 || v > 65536)
            return ss_error_set(SS_EUSAGE, "--sizes: '%s' is not a worker count in [2, 65536]",
                                tok);
        if (n_sizes == BENCH_NETWORK_MAX_SIZES)
            return ss_error_set(SS_EUSAGE, "--sizes: at most %d values", BENCH_NETWORK_MAX_SIZES);
        sizes[n_sizes++] = (int)v;
    }
    const long steps = cfg->replay_steps > 0 ? cfg->replay_steps : 1000;
    const int batch = options_was_set(cfg, "batch") || prof.batch <= 0 ? cfg->batch : prof.batch;
    policy_config pc;
    policy_config_default(&pc);
    pc.kind = POLICY_BSP;
    pc.batch = batch;
    pc.steps = steps;
    pc.eval_every = steps;
    trace *t;
    if ((rc = profile_synthesize(&prof, &pc, NULL, &t)) != SS_OK) return rc;
    const platform_gen_spec gen = replay_opts_default().gen;
    char bw[32], lat[32];
    platform_format_bandwidth(gen.bandwidth_bps, bw, sizeof bw);
    platform_format_latency(gen.latency_s, lat, sizeof lat);
    printf("# bench replay: BSP, %s (%.4g parameters, %.4g MB per exchange), batch %d, star "
           "platform %s %s per link, %s hosts, LV08; each run in its own process (one core)\n",
           prof.name, prof.params, 4 * prof.params / 1e6, batch, bw, lat,
           platform_gpu_name(gen.gpu));
    printf("# ring-coarse all-reduce (one flow per ring neighbour per phase)\n");
    printf("%8s %8s %16s %12s %14s %14s\n", "workers", "steps", "sim_time_s", "wall_s",
           "wall_ms/step", "us/worker-step");
    fflush(stdout);
    for (int i = 0; i < n_sizes; i++) {
        /* 65536 workers x 1000 steps takes hours: larger runs default to fewer steps */
        long s = cfg->replay_steps > 0 ? steps : sizes[i] > 4096 ? 20 : steps;
        t->steps_done = s;
        replay_result rr;
        if ((rc = bench_one(t, sizes[i], SIM_ALLREDUCE_RING_COARSE, SIM_NETWORK_LV08, &rr)))
            goto done;
        printf("%8d %8ld %16.9g %12.3f %14.3f %14.3f\n", sizes[i], s, rr.res.sim_time_s, rr.wall_s,
               1e3 * rr.wall_s / (double)s, 1e6 * rr.wall_s / ((double)s * sizes[i]));
        fflush(stdout);
    }

    /* message-level ring against SMPI's ring all-reduce, same bytes, same platform, CM02 */
    if (cfg->max_smpi_hosts < 64) goto done;
    const int smpi_sizes[2] = {64, 256};
    const long smpi_steps =
        cfg->replay_steps > 0 && cfg->replay_steps < 20 ? cfg->replay_steps : 20;
    printf("# message-level ring replay (%ld steps, CM02) against SMPI MPI_Allreduce "
           "(smpi/allreduce:lr, one call) of the same %.0f bytes\n",
           smpi_steps, 4.0 * floor(prof.params));
    double smpi_s[2], smpi_w[2];
    rc = smpi_allreduce(cfg, 4.0 * prof.params, smpi_sizes, 2, smpi_s, smpi_w);
    if (rc != SS_OK) goto done;
    printf("%8s %16s %16s %12s %14s %14s %10s\n", "workers", "replay_comm_s", "smpi_allred_s",
           "diff_%", "replay_wall/st", "smpi_wall", "wall_ratio");
    for (int i = 0; i < 2; i++) {
        t->steps_done = smpi_steps;
        replay_result rr;
        if ((rc = bench_one(t, smpi_sizes[i], SIM_ALLREDUCE_RING, SIM_NETWORK_CM02, &rr)))
            goto done;
        /* comm per step: the all-reduce time of one step as the replay charges it */
        double comm = (rr.res.comm_s + rr.res.wait_s) / (double)smpi_steps;
        double wall = rr.wall_s / (double)smpi_steps;
        printf("%8d %16.9g ", smpi_sizes[i], comm);
        if (isnan(smpi_s[i]))
            printf("%16s %12s %14.4f %14s %10s\n", "-", "-", wall, "-", "-");
        else
            printf("%16.9g %12.3f %14.4f %14.3f %10.2f\n", smpi_s[i],
                   100 * (comm - smpi_s[i]) / smpi_s[i], wall, smpi_w[i], smpi_w[i] / wall);
        fflush(stdout);
    }
done:
    trace_free(t);
    return rc;
}
