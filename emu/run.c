/* The emulated run's runner: options, data, platform and cluster, the emulation, the outputs,
 * the simulation (sim_policy_run), and the summary. Real mode's runner (emu/real.c) takes the
 * same steps over MPI ranks. */
#include "emu/run.h"
#include "common/csv.h"
#include "common/sorted.h"
#include "common/status.h"
#include "emu/memory.h"
#include "emu/recipe.h"
#include "emu/run_internal.h"
#include "common/engine.h"
#include "sim/net/coll/collective.h"
#include "sim/policy/policy_build.h"
#include "sim/policy/policy_registry.h"
#include "sim/simulate.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* 1 when an evaluation meets --target-accuracy, or --target-perplexity (lower is better). */
static int reaches_target(const run_config *cfg, const emulation_eval *ev) {
    if (cfg->target_perplexity > 0) return exp(ev->test_loss) <= cfg->target_perplexity;
    return cfg->target_accuracy > 0 && ev->test_accuracy >= cfg->target_accuracy;
}

static void on_eval(void *ctx, const emulation_eval *ev) {
    run_context *rc = ctx;
    csv_write_numbers(rc->metrics.fp, "%.0f %.6f %.9f %.6f %.6f %.6f %.0f %.0f %.6g",
                      (const double[]){(double)ev->step, ev->epoch, ev->sim_time_s, ev->train_loss,
                                       ev->test_loss, ev->test_accuracy, (double)ev->sync_steps,
                                       ev->bytes_sent, exp(ev->test_loss)},
                      9);
    fflush(rc->metrics.fp);
    if (rc->tta_s < 0 && reaches_target(rc->cfg, ev)) rc->tta_s = ev->sim_time_s;
    if (rc->curve) {
        run_curve_point p = {ev->sim_time_s, ev->test_accuracy};
        isolate_blob_append(rc->curve, &p, sizeof p);
    }
    progress_update(&rc->bar, ev->step, "step %ld/%ld  sim %.2f s  acc %.4f", ev->step,
                    rc->total_steps, ev->sim_time_s, ev->test_accuracy);
}

void run_on_record(void *ctx, const step_record *r) {
    run_context *rc = ctx;
    if (rc->warmup_steps >= 0 && r->step > rc->warmup_steps) {
        if (rc->n_deltas == rc->cap_deltas) {
            rc->cap_deltas = rc->cap_deltas ? 2 * rc->cap_deltas : 4096;
            rc->deltas = realloc(rc->deltas, rc->cap_deltas * sizeof(double));
            SS_ASSERT(rc->deltas != NULL);
        }
        rc->deltas[rc->n_deltas++] = r->delta;
        if (r->worker == 0 && r->step >= rc->calibrated_from) {
            rc->steps_after++;
            rc->syncs_after += r->decision != 0;
        }
    }
    if (!rc->tracing) return;
    trace_writer_record(&rc->tw, r);
}

/* steps.trace (traces/FORMAT.md) starts with its magic and version, the model's sizes, the
 * resolved policy, the run's configuration and the column names, each line behind '#', so that
 * gnuplot and awk read the records directly and replay can rebuild the run. */
static void write_trace_header(const run_request *rq, const policy_config *pc, emulation *em,
                               int real, trace_writer *tw, FILE *fp) {
    const step_source *src = emulation_source(em);
    trace_meta meta = {.param_count = (double)src->param_count,
                       .param_bytes = src->param_bytes,
                       .sample_bytes = src->sample_bytes,
                       .state_bytes = src->state_bytes};
    snprintf(meta.source, sizeof meta.source, "%s", real ? "real" : "emulation");
    snprintf(meta.model, sizeof meta.model, "%.63s", rq->cfg->model);
    /* the layers of a step of pc->batch samples: a replay of the trace may overlap them */
    meta.layers = emulation_step_layers(em, pc->batch, &meta.n_layers);
    trace_writer_begin(tw, fp, &meta, pc, rq->config_ini ? rq->config_ini : "");
    free((void *)meta.layers);
}

/* The policy configuration the options describe; steps from epochs (an epoch is |D| samples
 * processed by all workers together). */
static int make_policy(const run_config *cfg, size_t train_n, policy_config *pc,
                       long *steps_per_epoch) {
    policy_build_env env = {.mode = POLICY_BUILD_RUN, .train_samples = train_n};
    int rc = policy_config_build(cfg, &env, pc);
    *steps_per_epoch = env.steps_per_epoch;
    return rc;
}

/* --target-perplexity is a language model's target, --target-accuracy an image model's (a
 * language model's accuracy is its next-token accuracy); not both. */
static int check_target(const run_config *cfg, const model_spec *spec) {
    if (cfg->target_perplexity > 0 && cfg->target_accuracy > 0)
        return ss_error_set(SS_EUSAGE, "--target-accuracy and --target-perplexity: give one "
                                       "target, not both");
    if (cfg->target_perplexity > 0 && spec->arch != MODEL_ARCH_GPT)
        return ss_error_set(SS_EUSAGE,
                            "--target-perplexity applies to language models (gpt:wlm, "
                            "gpt:L,D,H,T); model %s takes --target-accuracy",
                            cfg->model);
    return SS_OK;
}

int run_open_data(const run_config *cfg, device **dev, dataset *train, dataset *test,
                  model_spec *spec) {
    *dev = NULL;
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    /* auto on a machine without a usable GPU runs on the CPU without a notice: the banner's
     * device line says which device ran, and --device cuda says why no GPU is usable */
    int rc = device_open(cfg->device, dev, NULL, 0);
    if (rc != SS_OK) {
        *dev = NULL;
        return rc;
    }
    rc =
        dataset_load(cfg->dataset, cfg->data_dir[0] ? cfg->data_dir : NULL, cfg->seed, train, test);
    if (rc == SS_OK)
        rc = model_spec_parse(spec, cfg->model, train->c, train->h, train->w, train->classes);
    if (rc == SS_OK) rc = dataset_fit_model(train, test, spec);
    if (rc == SS_OK) rc = check_target(cfg, spec);
    if (rc != SS_OK) {
        dataset_free(train);
        dataset_free(test);
        device_close(*dev);
        *dev = NULL;
    }
    return rc;
}

/* Writes the generated platform to OUT/platform.xml, or takes the user's. */
static int prepare_platform(const run_config *cfg, int n_ps, char *path, size_t path_size) {
    if (cfg->platform[0]) {
        snprintf(path, path_size, "%s", cfg->platform);
        return SS_OK;
    }
    platform_gen_spec spec;
    int rc = platform_spec_from_config(cfg, cfg->workers, n_ps, &spec);
    if (rc != SS_OK) return rc;
    outputs_path(cfg, "platform.xml", path, path_size);
    return platform_generate_file(&spec, path);
}

/* The options parsed before anything is opened: a bad one costs no data loading. */
static int parse_run_options(emu_run *r) {
    const run_config *cfg = r->cfg;
    int rc;
    if ((rc = engine_parse_threads(cfg->threads, &r->threads)) != SS_OK) return rc;
    if ((rc = lr_schedule_parse(&r->sched, cfg->lr_schedule)) != SS_OK) return rc;
    r->sched.base_lr = r->rq->lr;
    r->sched.warmup_epochs = cfg->lr_warmup;
    const policy_info *pol = policy_registry_find(cfg->policy); /* "": the baseline */
    if (!pol) pol = policy_registry_baseline();
    const char *part_text = cfg->partition[0] ? cfg->partition : pol->default_partition;
    snprintf(r->partition, sizeof r->partition, "%s", part_text);
    if ((rc = partition_parse(part_text, &r->part_kind, &r->partition_param)) != SS_OK) return rc;
    return sim_network_model_parse("--network-model", cfg->network_model, &r->net_model);
}

/* The files an emulated run writes; an earlier run's are removed before it starts. A
 * platform.xml named by --platform is the user's input, never removed. */
static int clear_outputs(const run_config *cfg) {
    static const char *const always[] = {"summary.json", "metrics.csv", "steps.trace",
                                         "engine-trace.json", NULL};
    static const char *const generated[] = {"platform.xml", NULL};
    int rc = outputs_clear(cfg, always);
    if (rc != SS_OK || !outputs_is_generated(cfg, "platform.xml")) return rc;
    return outputs_clear(cfg, generated);
}

/* The parameter-server hosts a policy uses: its servers under SSP/ASP or --collective ps. */
int run_servers_of(const policy_config *pc) {
    return (policy_is_async(pc) || pc->use_ps) ? pc->ps_servers : 0;
}

/* The servers the options ask for, before the training set is loaded (options only), and the
 * all-reduce algorithm when the run all-reduces (else SIM_ALLREDUCE_RING, which any platform
 * runs). */
static int options_servers(const run_config *cfg, int *servers, sim_allreduce_algo *algo) {
    policy_config pc;
    policy_build_env env = {.mode = POLICY_BUILD_RUN, .train_samples = 0};
    int rc = policy_config_build(cfg, &env, &pc);
    free((void *)pc.slowdown);
    *servers = rc == SS_OK ? run_servers_of(&pc) : 0;
    *algo = rc == SS_OK && !run_servers_of(&pc) ? pc.coll.algo : SIM_ALLREDUCE_RING;
    return rc;
}

/* OUT/ with config.ini and platform.xml, and the simulated cluster on that platform. */
static int open_cluster(emu_run *r) {
    if (r->real && r->rank != 0) return SS_OK; /* rank 0 writes OUT/; there is no cluster */
    int rc = ss_mkdir_p(r->cfg->out_dir);
    if (rc == SS_OK) rc = clear_outputs(r->cfg);
    if (rc == SS_OK) rc = outputs_open_dir(r->cfg, r->rq->config_ini);
    if (rc != SS_OK || r->real) return rc;
    const int n_ps = run_servers_of(&r->pc);
    if ((rc = prepare_platform(r->cfg, n_ps, r->platform, sizeof r->platform)) != SS_OK) return rc;
    sim_cluster_opts co = {.platform_path = r->platform,
                           .n_workers = r->cfg->workers,
                           .n_ps = n_ps,
                           .model = r->net_model,
                           .verbose = 0};
    return sim_cluster_open(&co, &r->cluster);
}

/* The emulation step source: replicas, batches, schedule, evaluation. */
/* The compute engine's threads (on a GPU each issues its replicas' kernels on a CUDA stream of
 * its own); real mode has one replica per rank. */
static int emulation_threads_for(const emu_run *r) {
    return r->real ? 1 : r->threads;
}

static int create_emulation(emu_run *r) {
    const run_config *cfg = r->cfg;
    const policy_config *pc = &r->pc;
    const int async = policy_is_async(pc);
    /* Injected samples join a worker's own b' = b / (1 + alpha beta N); room for them all. */
    const int local_batch = policy_local_batch(pc);
    const int max_batch = policy_max_batch(pc);
    r->sched.steps_per_epoch = r->steps_per_epoch;
    r->sched.total_steps = pc->steps;
    emulation_config ec = {
        .dev = r->dev,
        .train = &r->train,
        .test = &r->test,
        .spec = &r->spec,
        .seed = cfg->seed,
        .workers = cfg->workers,
        .batch = local_batch,
        .max_batch = max_batch,
        .partition = r->part_kind,
        .partition_param = r->partition_param,
        .schedule = r->sched,
        .momentum = cfg->momentum,
        .weight_decay = cfg->weight_decay,
        .nesterov = cfg->nesterov,
        .clip_norm = cfg->clip_norm,
        .augment = !strcmp(cfg->augment, "yes"),
        .bn_average = strcmp(cfg->bn_stats, "local") != 0,
        .eval_every = pc->eval_every,
        .last_step = pc->steps,
        .measure_time = pc->compute.mode == SIM_COMPUTE_MEASURED || r->real,
        .layer_norms = pc->kind == POLICY_SELSYNC && pc->variant == SELSYNC_VARIANT_CODE,
        .use_ps = async,
        .ps_servers = pc->ps_servers,
        .ps_lr_scale = pc->server_lr_scale > 0 ? pc->server_lr_scale : 1.0 / cfg->workers,
        .evaluate_ps = async,
        .on_eval = on_eval,
        .eval_ctx = &r->ctx,
        .interrupted = r->real ? NULL : outputs_interrupted,
        .real = r->real,
        .dump_gradients = cfg->dump_gradients,
        .out_dir = cfg->out_dir,
        .threads = emulation_threads_for(r),
        .trace = cfg->engine_trace && !r->real};
    return emulation_create(&ec, &r->em);
}

/* OUT/metrics.csv with its header, and OUT/steps.trace with its header when tracing. */
static int open_outputs(emu_run *r) {
    if (r->real && r->rank != 0) return SS_OK;
    char path[1024];
    outputs_path(r->cfg, "metrics.csv", path, sizeof path);
    int rc = afile_open(&r->ctx.metrics, path);
    if (rc != SS_OK) return rc;
    fprintf(r->ctx.metrics.fp,
            "step,epoch,sim_time_s,train_loss,test_loss,test_accuracy,sync_steps,bytes_sent,"
            "test_perplexity\n");
    r->ctx.tracing = r->cfg->trace;
    if (!r->ctx.tracing) return SS_OK;
    outputs_path(r->cfg, "steps.trace", path, sizeof path);
    if ((rc = afile_open(&r->ctx.trace, path)) != SS_OK) return rc;
    write_trace_header(r->rq, &r->pc, r->em, r->real, &r->ctx.tw, r->ctx.trace.fp);
    return SS_OK;
}

/* The platform before any data is loaded: the generated one's options, or the user's file (its
 * syntax and its host count); the hosts it has go into the memory estimate. */
static int check_platform(emu_run *r, double *hosts) {
    const run_config *cfg = r->cfg;
    int n_ps;
    sim_allreduce_algo algo;
    int rc = options_servers(cfg, &n_ps, &algo);
    if (rc != SS_OK) return rc;
    if (!cfg->platform[0]) {
        platform_gen_spec spec;
        *hosts = (double)cfg->workers + n_ps;
        if ((rc = platform_spec_from_config(cfg, cfg->workers, n_ps, &spec)) != SS_OK) return rc;
        return sim_coll_check_flat(algo, spec.n_nodes == 0, "--collective");
    }
    if ((rc = outputs_check_input(cfg, "--platform", cfg->platform)) != SS_OK) return rc;
    sim_platform_info info;
    if ((rc = sim_platform_check(cfg->platform, &info)) != SS_OK) return rc;
    *hosts = info.n_hosts;
    const int enough = info.n_hosts >= cfg->workers + n_ps, flat = info.n_nodes == 0;
    sim_platform_info_free(&info);
    if ((rc = sim_coll_check_flat(algo, flat, "--collective")) != SS_OK) return rc;
    if (!enough)
        return ss_error_set(SS_EUSAGE,
                            "--platform %s has %.0f hosts; %d workers and %d servers "
                            "need %d",
                            cfg->platform, *hosts, cfg->workers, n_ps, cfg->workers + n_ps);
    return SS_OK;
}

/* Everything the options alone decide, before the data set is loaded and before OUT/ exists:
 * schedule, partition and network model, the policy's options and checks, the platform, the
 * model's text and --dump-gradients. */
static int check_options(emu_run *r, double *hosts) {
    int rc;
    const policy_info *p = policy_registry_find(r->cfg->policy);
    if (p && p->check && r->rq->was_set && (rc = p->check(r->cfg, r->rq->was_set)) != SS_OK)
        return rc;
    if ((rc = parse_run_options(r)) != SS_OK) return rc;
    if (!r->real && (rc = check_platform(r, hosts)) != SS_OK) return rc;
    model_spec spec; /* the text alone; the data set's shape is checked again once loaded */
    if ((rc = model_spec_parse(&spec, r->cfg->model, 1, 28, 28, 10)) != SS_OK) return rc;
    /* the ranks' snapshots carry parameters only: rank 0 would evaluate batch norm with the
     * initial running statistics */
    if (r->real && model_spec_has_buffers(&spec))
        return ss_error_set(SS_EUSAGE,
                            "--model %s: syncsim real does not take models with batch "
                            "normalization yet (their running statistics are not gathered); use "
                            "syncsim train, or logreg, mlp or cnn",
                            r->cfg->model);
    gradient_dump *gd = NULL;
    rc = gradient_dump_create(r->cfg->dump_gradients, "", &gd);
    gradient_dump_destroy(gd);
    return rc;
}

/* The checks that need the data set and the step count, before OUT/ is touched: the partition
 * against the classes, --dump-gradients against the last step. */
static int check_against_data(emu_run *r) {
    int rc = partition_check(&r->train, r->cfg->workers, r->part_kind, r->partition_param);
    if (rc != SS_OK) return rc;
    gradient_dump *gd = NULL;
    if ((rc = gradient_dump_create(r->cfg->dump_gradients, "", &gd)) != SS_OK) return rc;
    const long last = gradient_dump_last_step(gd);
    gradient_dump_destroy(gd);
    if (last > r->pc.steps)
        return ss_error_set(SS_EUSAGE,
                            "--dump-gradients: step %ld is past the run's last step (%ld steps; "
                            "give steps 1 to %ld, or more --epochs)",
                            last, r->pc.steps, r->pc.steps);
    return SS_OK;
}

/* Opens everything the simulation needs, in the order that reports a bad option first. */
int run_open(emu_run *r) {
    int rc;
    double hosts = 0;
    if ((rc = check_options(r, &hosts)) != SS_OK) return rc;
    /* One BLAS thread in every emulated run, whatever runs beside it: OpenBLAS's results may
     * depend on its thread count, and a run must give the same numbers alone, in compare, in a
     * sweep and re-run from its config.ini. */
    openblas_set_num_threads(1);
    if ((rc = run_open_data(r->cfg, &r->dev, &r->train, &r->test, &r->spec)) != SS_OK) return rc;
    /* real mode: MPI (without CUDA support) sends and receives the replicas' vectors in place */
    if (r->real && (rc = device_share_with_host(r->dev)) != SS_OK) return rc;
    if ((rc = make_policy(r->cfg, r->train.n, &r->pc, &r->steps_per_epoch)) != SS_OK) return rc;
    if (r->real) { /* real steps vary by themselves; overlap only when asked for */
        r->pc.compute_jitter = r->pc.comm_jitter = 0;
        if (r->pc.overlap == POLICY_OVERLAP_AUTO) r->pc.overlap = POLICY_OVERLAP_OFF;
    }
    r->ctx.warmup_steps = r->pc.kind == POLICY_SELSYNC ? policy_selsync_warmup_steps(&r->pc) : -1;
    r->ctx.calibrated_from = r->ctx.warmup_steps + policy_selsync_calibration_steps(&r->pc) + 1;
    const int groups = r->pc.kind == POLICY_DSSYNC ? r->pc.group_size : 0;
    if ((rc = memory_check_run(r->dev, &r->spec, r->cfg->workers, emulation_threads_for(r),
                               policy_max_batch(&r->pc),
                               memory_run_vectors(r->cfg->workers, policy_is_async(&r->pc), groups),
                               hosts, r->memory_line, sizeof r->memory_line)) != SS_OK)
        return rc;
    if ((rc = check_against_data(r)) != SS_OK) return rc;
    if ((rc = open_cluster(r)) != SS_OK) return rc;
    if ((rc = create_emulation(r)) != SS_OK) return rc;
    return open_outputs(r);
}

void run_print_banner(const emu_run *r) {
    const model *m = emulation_replica(r->em, 0);
    if (r->real)
        printf("syncsim real: %s, %d workers on %d MPI ranks, seed %llu\n",
               policy_kind_name(r->pc.kind), r->cfg->workers, r->ranks,
               (unsigned long long)r->cfg->seed);
    else
        printf("syncsim train: %s, %d workers, seed %llu, platform %s\n",
               policy_kind_name(r->pc.kind), r->cfg->workers, (unsigned long long)r->cfg->seed,
               r->platform);
    printf("device %s, %d compute thread%s | model %s: %zu parameters (%.2f MB per exchange) | "
           "%ld steps, evaluation every %ld%s%s\n",
           device_name(r->dev), emulation_threads(r->em), emulation_threads(r->em) == 1 ? "" : "s",
           r->cfg->model, model_param_count(m), model_param_bytes(m) / 1e6, r->pc.steps,
           r->pc.eval_every, r->memory_line[0] ? " | " : "", r->memory_line);
    char exchange[64], compute[48];
    policy_describe_exchange(&r->pc, exchange, sizeof exchange);
    sim_compute_format(&r->pc.compute, compute, sizeof compute);
    if (r->pc.compute.mode == SIM_COMPUTE_MODEL)
        snprintf(compute, sizeof compute, "model:%s, %s",
                 sim_precision_name(r->pc.compute.precision),
                 sim_framework_name(r->pc.compute.framework));
    if (r->real)
        printf("data %s, partition %s, batch %d\n", r->train.name, r->partition, r->cfg->batch);
    else
        printf("data %s, partition %s, batch %d | exchange %s | compute %s on %s | network "
               "%s, %s\n",
               r->train.name, r->partition, r->cfg->batch, exchange, compute, r->cfg->gpu,
               r->cfg->platform[0] ? r->cfg->platform : r->cfg->bandwidth,
               r->cfg->platform[0] ? "given" : r->cfg->topology);
    char recipe[512];
    recipe_describe(r->cfg, r->rq->lr, recipe, sizeof recipe);
    if (model_buffer_count(m))
        printf("%s | bn-stats %s\n", recipe, r->cfg->bn_stats);
    else
        printf("%s\n", recipe);
    const sim_allreduce_algo a = r->pc.coll.algo;
    if (!r->real && r->cfg->workers >= SIM_COARSE_MIN_MEMBERS && !r->pc.use_ps &&
        (a == SIM_ALLREDUCE_RING || a == SIM_ALLREDUCE_HIER))
        printf("note: --collective %s simulates every message (2(N-1) per worker per all-reduce, "
               "%.3g in all at %d workers); ring-coarse, hier-coarse or auto time it in closed "
               "form, far faster at this scale\n",
               sim_allreduce_algo_name(a), 2.0 * (r->cfg->workers - 1) * r->cfg->workers,
               r->cfg->workers);
    fflush(stdout);
}

/* The policy on the cluster, then the final evaluation of the consensus model. */
int run_simulate(emu_run *r) {
    outputs_install_interrupt_handler();
    r->ctx.total_steps = r->pc.steps;
    progress_begin(&r->ctx.bar, r->cfg->progress, r->pc.steps);
    const double t0 = outputs_wall_s();
    int rc =
        sim_policy_run(&r->pc, r->cluster, emulation_source(r->em), run_on_record, &r->ctx, &r->pr);
    emulation_finish_evaluation(r->em); /* a part of the loop */
    r->train_wall_s = outputs_wall_s() - t0;
    r->train_eval_s = emulation_eval_seconds(r->em);
    progress_end(&r->ctx.bar);
    if (rc != SS_OK) return rc;
    const step_counters final = {r->pr.sync_steps, r->pr.bytes_sent};
    emulation_evaluate_final(r->em, r->pr.sim_time_s, &final);
    if (!r->skip_worker_accuracy) r->worker_accuracy = emulation_worker_accuracy_mean(r->em);
    if (r->cfg->engine_trace && !r->real) {
        char path[1024];
        outputs_path(r->cfg, "engine-trace.json", path, sizeof path);
        return emulation_trace_write(r->em, path);
    }
    return SS_OK;
}

/* SSP/ASP: the staleness histograms up to their last non-empty bin. */
static void summarize_staleness(const policy_result *pr, run_summary *s) {
    run_summary_set_staleness(s, pr->clock_gap_hist, pr->update_staleness_hist,
                              POLICY_STALENESS_BINS, pr->max_clock_gap, pr->max_update_staleness);
}

/* The q-quantile of sorted values (nearest rank). */
static double quantile(const double *v, size_t n, double q) {
    size_t k = (size_t)ceil(q * (double)n);
    return v[k > 0 ? k - 1 : 0];
}

/* SelSync with a fixed delta that synchronized at every step after the warm-up (delta below the
 * range of Delta: the run was BSP) or at none (above it: local SGD); Delta's scale grows with
 * the worker count, so a threshold from another setting often lands there. */
static void warn_degenerate_delta(const emu_run *r, const run_summary *sum) {
    const run_context *c = &r->ctx;
    if (r->pc.delta < 0 || c->steps_after < 10 || !isfinite(sum->delta_p50)) return;
    const int all = c->syncs_after == c->steps_after, none = c->syncs_after == 0;
    if (!all && !none) return;
    fprintf(stderr,
            "warning: --delta %g is %s the largest worker's Delta at every one of the %ld steps "
            "after the warm-up, so SelSync %s: this run is %s (Delta of all workers: p50 %.4g, "
            "p90 %.4g, p99 %.4g, max %.4g at %d workers; a step's largest grows with the "
            "worker count). A delta inside that range, or --delta auto:R for a target LSSR R, "
            "makes SelSync choose\n",
            r->pc.delta, all ? "below" : "above", c->steps_after,
            all ? "synchronized at every one" : "synchronized at none",
            all ? "BSP" : "local SGD without averaging", sum->delta_p50, sum->delta_p90,
            sum->delta_p99, sum->delta_max, r->cfg->workers);
}

/* SelSync: Delta's distribution after the warm-up; with --delta auto, the target, the delta
 * chosen and the LSSR reached after the calibration. */
static void summarize_delta(emu_run *r, run_summary *s) {
    run_context *c = &r->ctx;
    if (c->warmup_steps < 0 || c->n_deltas == 0) return;
    sorted_doubles(c->deltas, c->n_deltas);
    s->delta_p50 = quantile(c->deltas, c->n_deltas, 0.5);
    s->delta_p90 = quantile(c->deltas, c->n_deltas, 0.9);
    s->delta_p99 = quantile(c->deltas, c->n_deltas, 0.99);
    s->delta_max = c->deltas[c->n_deltas - 1];
    if (r->pc.delta >= 0) return;
    s->delta_target_lssr = -r->pc.delta;
    if (c->steps_after == 0) return; /* the run ended before the calibration did: null */
    s->delta_chosen = r->pr.delta_chosen;
    s->delta_chosen_min = r->pr.delta_chosen_min;
    s->delta_chosen_max = r->pr.delta_chosen_max;
    s->delta_choices = r->pr.delta_choices;
    s->lssr_after_calibration = 1.0 - (double)c->syncs_after / (double)c->steps_after;
}

/* The model, data and configuration part of the summary. */
static void summarize_setup(const emu_run *r, run_summary *s) {
    const run_config *cfg = r->cfg;
    const model *m = emulation_replica(r->em, 0);
    s->target_accuracy = cfg->target_accuracy;
    s->target_perplexity = cfg->target_perplexity;
    s->seed = cfg->seed;
    snprintf(s->device, sizeof s->device, "%s", device_name(r->dev));
    s->threads = emulation_threads(r->em);
    snprintf(s->model, sizeof s->model, "%s", cfg->model);
    snprintf(s->dataset, sizeof s->dataset, "%s", r->train.name);
    snprintf(s->partition, sizeof s->partition, "%s", r->partition);
    policy_describe_exchange(&r->pc, s->collective, sizeof s->collective);
    if (r->pc.compute.mode == SIM_COMPUTE_MODEL) {
        snprintf(s->precision, sizeof s->precision, "%s",
                 sim_precision_name(r->pc.compute.precision));
        snprintf(s->framework, sizeof s->framework, "%s",
                 sim_framework_name(r->pc.compute.framework));
    }
    s->batch = cfg->batch;
    s->lr = r->rq->lr;
    recipe_summarize(cfg, s);
    if (model_buffer_count(m)) snprintf(s->bn_stats, sizeof s->bn_stats, "%s", cfg->bn_stats);
    s->local_batch = policy_local_batch(&r->pc);
    s->params = (double)model_param_count(m);
    s->flops_per_sample = model_forward_flops_per_sample(m) + model_backward_flops_per_sample(m);
    /* The platform as the user named it, or the generated one relative to the run directory, so
     * that identical runs in different directories write identical summaries. */
    if (r->real)
        snprintf(s->platform, sizeof s->platform, "real: %d MPI ranks", r->ranks);
    else if (cfg->platform[0])
        snprintf(s->platform, sizeof s->platform, "%s", cfg->platform);
    else
        snprintf(s->platform, sizeof s->platform, "platform.xml (generated: %s, %s, %s)",
                 cfg->bandwidth, cfg->topology, cfg->gpu);
}

static void summarize(emu_run *r, run_summary *s, long *div_step) {
    const emulation_eval *last = emulation_last_eval(r->em);
    const policy_result *pr = &r->pr;
    run_summary_init(s);
    snprintf(s->status, sizeof s->status, "%s",
             emulation_diverged(r->em, div_step)   ? "diverged"
             : outputs_interrupted() || r->stopped ? "interrupted"
                                                   : "ok");
    snprintf(s->mode, sizeof s->mode, "%s", r->real ? "real" : "emulation");
    snprintf(s->policy, sizeof s->policy, "%s", policy_kind_name(r->pc.kind));
    s->workers = r->cfg->workers;
    s->test_accuracy = last->test_accuracy;
    s->test_loss = isfinite(last->test_loss) ? last->test_loss : -1;
    if (r->spec.arch == MODEL_ARCH_GPT && isfinite(last->test_loss))
        s->test_perplexity = exp(last->test_loss);
    s->worker_test_accuracy_mean = r->worker_accuracy;
    s->sim_time_s = pr->sim_time_s;
    s->tta_s = r->ctx.tta_s;
    s->steps = last->step;
    s->sync_steps = pr->sync_steps;
    s->lssr = last->step > 0 ? 1.0 - (double)pr->sync_steps / (double)last->step : 0;
    s->bytes_sent = pr->bytes_sent;
    s->compute_s = pr->compute_s;
    s->comm_s = pr->comm_s;
    s->wait_s = pr->wait_s;
    if (r->pc.loss_tolerance > 0) {
        s->dropped_fraction =
            pr->dlcp_bytes_total > 0 ? pr->dlcp_bytes_dropped / pr->dlcp_bytes_total : 0.0;
        s->dlcp_time_saved_s = pr->dlcp_time_saved_s;
    }
    s->epochs = emulation_samples(r->em) / (double)r->train.n;
    summarize_setup(r, s);
    if (policy_is_async(&r->pc)) summarize_staleness(pr, s);
    summarize_delta(r, s);
}

/* Commits metrics.csv and steps.trace, writes summary.json, reports; the status of the run. */
int run_finish(emu_run *r, run_summary *sum, double wall0) {
    long div_step = 0;
    summarize(r, sum, &div_step);
    int rc;
    if ((rc = afile_commit(&r->ctx.metrics)) != SS_OK) return rc;
    if (r->ctx.tracing) trace_writer_end(&r->ctx.tw, r->pr.sim_time_s);
    if (r->ctx.tracing && (rc = afile_commit(&r->ctx.trace)) != SS_OK) return rc;
    /* no wall time in the file: identical runs write identical summaries */
    if (summary_write(r->cfg, sum) != SS_OK) fprintf(stderr, "syncsim: %s\n", ss_error_message());
    sum->wall_s = outputs_wall_s() - wall0;
    if (!strcmp(sum->status, "diverged")) {
        fprintf(stderr, "syncsim: the training loss became NaN or Inf at step %ld: diverged\n",
                div_step);
        rc = SS_EDIVERGED;
    } else if (!strcmp(sum->status, "interrupted")) {
        rc = SS_EINTERRUPT;
    }
    printf("%s: test accuracy %.4f, %s time %.3f s (compute %.3f, comm %.3f, wait %.3f "
           "per worker), LSSR %.3f, %.3f GB sent, tta %s; wall %.1f s\n"
           "outputs: %s/{config.ini,%smetrics.csv,%s%ssummary.json}\n",
           sum->status, sum->test_accuracy, r->real ? "measured" : "simulated", sum->sim_time_s,
           sum->compute_s, sum->comm_s, sum->wait_s, sum->lssr, sum->bytes_sent / 1e9,
           sum->tta_s >= 0 ? "reached" : "-", sum->wall_s, r->cfg->out_dir,
           r->cfg->platform[0] || r->real ? "" : "platform.xml,",
           r->ctx.tracing ? "steps.trace," : "",
           r->cfg->engine_trace && !r->real ? "engine-trace.json," : "");
    printf("mean of the workers' own test accuracies %.4f\n", sum->worker_test_accuracy_mean);
    if (isfinite(sum->delta_p50))
        printf("Delta after the warm-up: p50 %.4g, p90 %.4g, p99 %.4g, max %.4g\n", sum->delta_p50,
               sum->delta_p90, sum->delta_p99, sum->delta_max);
    if (isfinite(sum->delta_target_lssr) && sum->delta_choices > 1)
        printf("delta auto: target LSSR %.3f, delta chosen %ld times (every %ld steps), from "
               "%.4g to %.4g, last %.4g; LSSR after the calibration %.3f (whole run %.3f)\n",
               sum->delta_target_lssr, sum->delta_choices, r->pc.delta_every, sum->delta_chosen_min,
               sum->delta_chosen_max, sum->delta_chosen, sum->lssr_after_calibration, sum->lssr);
    else if (isfinite(sum->delta_target_lssr))
        printf("delta auto: target LSSR %.3f, delta chosen %.4g, LSSR after the calibration "
               "%.3f (whole run %.3f)\n",
               sum->delta_target_lssr, sum->delta_chosen, sum->lssr_after_calibration, sum->lssr);
    warn_degenerate_delta(r, sum);
    return rc;
}

void run_close(emu_run *r) {
    free(r->ctx.deltas);
    free((void *)r->pc.slowdown);
    if (r->ctx.metrics.fp) afile_abort(&r->ctx.metrics);
    if (r->ctx.trace.fp) afile_abort(&r->ctx.trace);
    emulation_destroy(r->em);
    if (r->cluster) sim_cluster_close(r->cluster);
    dataset_free(&r->train);
    dataset_free(&r->test);
    device_close(r->dev);
}

int run_check_emulated(const run_request *rq) {
    emu_run r;
    memset(&r, 0, sizeof r);
    r.rq = rq;
    r.cfg = rq->cfg;
    double hosts;
    return check_options(&r, &hosts);
}

int run_check_emulated_data(const run_request *rq, const dataset *train) {
    emu_run r;
    memset(&r, 0, sizeof r);
    r.rq = rq;
    r.cfg = rq->cfg;
    r.train = *train; /* borrowed: never freed here */
    int rc = parse_run_options(&r);
    if (rc == SS_OK) rc = make_policy(r.cfg, train->n, &r.pc, &r.steps_per_epoch);
    if (rc == SS_OK) rc = check_against_data(&r);
    free((void *)r.pc.slowdown);
    return rc;
}

int run_train_emulated(const run_request *rq, run_summary *sum, isolate_blob *curve) {
    run_summary_init(sum);
    emu_run r;
    memset(&r, 0, sizeof r);
    r.rq = rq;
    r.cfg = rq->cfg;
    r.ctx.cfg = rq->cfg;
    r.ctx.tta_s = -1;
    r.ctx.curve = curve;
    policy_config_default(&r.pc);
    const double wall0 = outputs_wall_s();
    int rc = run_open(&r);
    if (rc == SS_OK) {
        run_print_banner(&r);
        rc = run_simulate(&r);
    }
    if (rc == SS_OK) rc = run_finish(&r, sum, wall0);
    run_close(&r);
    return rc;
}
