#include "cli/run_emulation.h"
#include "cli/options.h"
#include "cli/outputs.h"
#include "common/csv.h"
#include "common/status.h"
#include "emu/emulation.h"
#include "sim/cluster.h"
#include "sim/platform_gen.h"
#include "sim/policy.h"
#include "traces/trace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct run_context {
    const run_config *cfg;
    afile metrics;   /* metrics.csv, one row per evaluation */
    afile trace;     /* steps.trace, one record per worker step */
    trace_writer tw; /* writes steps.trace in the trace format (traces/FORMAT.md) */
    int tracing;
    double tta_s;
    sim_blob *curve;
    progress bar;
    long total_steps;
} run_context;

static void on_eval(void *ctx, const emulation_eval *ev) {
    run_context *rc = ctx;
    csv_write_numbers(rc->metrics.fp, "%.0f %.6f %.9f %.6f %.6f %.6f %.0f %.0f",
                      (const double[]){(double)ev->step, ev->epoch, ev->sim_time_s, ev->train_loss,
                                       ev->test_loss, ev->test_accuracy, (double)ev->sync_steps,
                                       ev->bytes_sent},
                      8);
    fflush(rc->metrics.fp);
    if (rc->tta_s < 0 && rc->cfg->target_accuracy > 0 &&
        ev->test_accuracy >= rc->cfg->target_accuracy)
        rc->tta_s = ev->sim_time_s;
    if (rc->curve) {
        run_curve_point p = {ev->sim_time_s, ev->test_accuracy};
        sim_blob_append(rc->curve, &p, sizeof p);
    }
    progress_update(&rc->bar, ev->step, "step %ld/%ld  sim %.2f s  acc %.4f", ev->step,
                    rc->total_steps, ev->sim_time_s, ev->test_accuracy);
}

static void on_record(void *ctx, const step_record *r) {
    run_context *rc = ctx;
    if (!rc->tracing) return;
    trace_writer_record(&rc->tw, r);
}

/* steps.trace (traces/FORMAT.md) starts with its magic and version, the model's sizes, the
 * resolved policy, the run's configuration and the column names, each line behind '#', so that
 * gnuplot and awk read the records directly and replay can rebuild the run. */
static void write_trace_header(const run_config *cfg, const policy_config *pc,
                               const step_source *src, trace_writer *tw, FILE *fp) {
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    SS_ASSERT(mem);
    options_write_ini(CMD_TRAIN, cfg, mem);
    fclose(mem);
    trace_meta meta = {.param_count = (double)src->param_count,
                       .param_bytes = src->param_bytes,
                       .sample_bytes = src->sample_bytes};
    snprintf(meta.source, sizeof meta.source, "emulation");
    snprintf(meta.model, sizeof meta.model, "%.63s", cfg->model);
    trace_writer_begin(tw, fp, &meta, pc, text);
    free(text);
}

/* The policy configuration the options describe; steps from epochs (an epoch is |D| samples
 * processed by all workers together). */
static int make_policy(const run_config *cfg, size_t train_n, policy_config *pc,
                       long *steps_per_epoch) {
    policy_config_default(pc);
    const char *name = cfg->policy[0] ? cfg->policy : "bsp";
    int rc = policy_kind_parse(name, &pc->kind);
    if (rc != SS_OK) return rc;
    pc->workers = cfg->workers;
    pc->batch = cfg->batch;
    pc->seed = cfg->seed;
    if (!strcmp(cfg->collective, "ps")) {
        pc->use_ps = 1;
    } else if ((rc = sim_allreduce_algo_parse("--collective", cfg->collective, &pc->coll.algo)) !=
               SS_OK) {
        return rc;
    }
    pc->coll.segment_bytes = cfg->segment_bytes;
    pc->ps_servers = cfg->ps_servers;
    if ((rc = sim_compute_parse("--compute", cfg->compute, &pc->compute)) != SS_OK) return rc;
    if (pc->compute.mode == SIM_COMPUTE_TRACE)
        return ss_error_set(SS_EUSAGE, "--compute trace is for replay; use flops or measured");
    pc->staleness = cfg->staleness;
    pc->client_fraction = cfg->client_fraction;
    pc->post_local_after = cfg->post_local_after;
    pc->delta = cfg->delta;
    pc->ewma_window = cfg->ewma_window;
    pc->ewma_alpha = cfg->ewma_alpha;
    pc->variant =
        !strcmp(cfg->selsync_variant, "code") ? SELSYNC_VARIANT_CODE : SELSYNC_VARIANT_PAPER;
    pc->aggregation = !strcmp(cfg->aggregation, "ga") ? AGGREGATE_GRADS : AGGREGATE_PARAMS;
    pc->order = !strcmp(cfg->selsync_order, "average-then-step") ? SELSYNC_ORDER_AVERAGE_THEN_STEP
                                                                 : SELSYNC_ORDER_STEP_THEN_AVERAGE;
    pc->inject_alpha = cfg->inject_alpha;
    pc->inject_beta = cfg->inject_beta;
    pc->group_size = cfg->group_size;
    pc->grouping =
        !strcmp(cfg->grouping, "alternate") ? DSSYNC_GROUPING_ALTERNATE : DSSYNC_GROUPING_SHUFFLE;
    pc->loss_tolerance = cfg->loss_tolerance;
    if ((rc = platform_parse_latency("--deadline", cfg->deadline, &pc->deadline_s)) != SS_OK)
        return rc;
    pc->chunk_bytes = cfg->chunk_bytes;
    pc->priority = !strcmp(cfg->priority, "magnitude") ? DLCP_PRIORITY_MAGNITUDE
                   : !strcmp(cfg->priority, "none")    ? DLCP_PRIORITY_NONE
                                                       : DLCP_PRIORITY_LAYER;
    pc->drop_keep_local = !strcmp(cfg->drop, "local");
    pc->straggler_prob = cfg->straggler_prob;
    pc->straggler_factor = cfg->straggler_factor;
    pc->background_load = cfg->background_load;
    pc->slowdown = NULL;
    if (cfg->slow_workers[0]) {
        /* owned by the caller once set: freed with free((void *)pc->slowdown) */
        double *slow = ss_malloc(sizeof(double) * (size_t)cfg->workers);
        for (int i = 0; i < cfg->workers; i++)
            slow[i] = 1.0;
        char list[RUN_CONFIG_TEXT];
        snprintf(list, sizeof list, "%s", cfg->slow_workers);
        for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
            char *end;
            long r = strtol(tok, &end, 10);
            if (*end || end == tok || r < 0 || r >= cfg->workers) {
                free(slow);
                return ss_error_set(SS_EUSAGE,
                                    "--slow-workers: '%s' is not a worker rank in [0, %d]", tok,
                                    cfg->workers - 1);
            }
            slow[r] = cfg->slow_factor;
        }
        pc->slowdown = slow;
    }

    /* Workers computing per step: all, or the sampled clients of FedAvg. */
    double computing = cfg->workers;
    if (pc->kind == POLICY_FEDAVG) {
        long m = lround(cfg->client_fraction * cfg->workers);
        computing = m < 1 ? 1 : (double)m;
    }
    double per_epoch = (double)train_n / (computing * cfg->batch);
    if (per_epoch < 1)
        return ss_error_set(SS_EUSAGE,
                            "--workers %d x --batch %d exceeds the training set (%zu samples): "
                            "not even one step per epoch",
                            cfg->workers, cfg->batch, train_n);
    *steps_per_epoch = (long)floor(per_epoch);
    pc->steps = lround(cfg->epochs * per_epoch);
    if (pc->steps < 1) pc->steps = 1;
    pc->local_steps = cfg->local_steps;
    if (pc->kind == POLICY_FEDAVG && cfg->local_epochs > 0) {
        /* E local epochs over a worker's share |D|/N */
        pc->local_steps = lround(cfg->local_epochs * (double)train_n / cfg->workers / cfg->batch);
        if (pc->local_steps < 1) pc->local_steps = 1;
    }
    pc->eval_every = cfg->eval_every > 0 ? cfg->eval_every
                                         : (*steps_per_epoch >= 10 ? *steps_per_epoch / 10 : 1);
    return SS_OK;
}

int run_open_data(const run_config *cfg, device **dev, dataset *train, dataset *test,
                  model_spec *spec) {
    *dev = NULL;
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    char notice[512] = "";
    int rc = device_open(cfg->device, dev, notice, sizeof notice);
    if (rc != SS_OK) {
        *dev = NULL;
        return rc;
    }
    if (notice[0]) fprintf(stderr, "%s\n", notice);
    rc =
        dataset_load(cfg->dataset, cfg->data_dir[0] ? cfg->data_dir : NULL, cfg->seed, train, test);
    if (rc == SS_OK)
        rc = model_spec_parse(spec, cfg->model, train->c, train->h, train->w, train->classes);
    if (rc != SS_OK) {
        dataset_free(train);
        dataset_free(test);
        device_close(*dev);
        *dev = NULL;
    }
    return rc;
}

double run_tier_latency_s(double bps) {
    return bps <= 5e9    ? 25e-6
           : bps <= 10e9 ? 15e-6
           : bps <= 25e9 ? 10e-6
           : bps <= 40e9 ? 5e-6
                         : 1e-6;
}

int run_platform_spec(const run_config *cfg, int n_hosts, int n_ps, platform_gen_spec *spec) {
    *spec = platform_gen_default();
    int rc;
    spec->n_hosts = n_hosts;
    spec->n_ps = n_ps;
    spec->efficiency = cfg->gpu_efficiency;
    if ((rc = platform_parse_bandwidth("--bandwidth", cfg->bandwidth, &spec->bandwidth_bps)) ||
        (strcmp(cfg->latency, "tier") &&
         (rc = platform_parse_latency("--latency", cfg->latency, &spec->latency_s))) ||
        (rc = platform_parse_topology("--topology", cfg->topology, &spec->topology)) ||
        (rc = platform_parse_gpu("--gpu", cfg->gpu, &spec->gpu)))
        return rc;
    if (!strcmp(cfg->latency, "tier")) spec->latency_s = run_tier_latency_s(spec->bandwidth_bps);
    return SS_OK;
}

/* Writes the generated platform to OUT/platform.xml, or checks the user's. */
static int prepare_platform(const run_config *cfg, int n_ps, char *path, size_t path_size) {
    if (cfg->platform[0]) {
        snprintf(path, path_size, "%s", cfg->platform);
        return SS_OK;
    }
    platform_gen_spec spec;
    int rc = run_platform_spec(cfg, cfg->workers, n_ps, &spec);
    if (rc != SS_OK) return rc;
    outputs_path(cfg, "platform.xml", path, path_size);
    afile f;
    if ((rc = afile_open(&f, path)) != SS_OK) return rc;
    if ((rc = platform_generate(&spec, f.fp)) != SS_OK) {
        afile_abort(&f);
        return rc;
    }
    return afile_commit(&f);
}

static void write_summary_json(const run_config *cfg, const run_summary *s, const policy_config *pc,
                               const policy_result *pr, const char *dev, const model *m,
                               const char *platform, const char *data_name) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "status", s->status);
    cJSON_AddStringToObject(j, "mode", "emulation");
    cJSON_AddStringToObject(j, "policy", s->policy);
    cJSON_AddNumberToObject(j, "workers", s->workers);
    cJSON_AddStringToObject(j, "platform", platform);
    cJSON_AddNumberToObject(j, "test_accuracy", s->test_accuracy);
    cJSON_AddNumberToObject(j, "test_loss", isfinite(s->test_loss) ? s->test_loss : -1);
    cJSON_AddNumberToObject(j, "sim_time_s", s->sim_time_s);
    if (s->tta_s >= 0)
        cJSON_AddNumberToObject(j, "tta_s", s->tta_s);
    else
        cJSON_AddNullToObject(j, "tta_s");
    cJSON_AddNumberToObject(j, "target_accuracy", cfg->target_accuracy);
    cJSON_AddNumberToObject(j, "lssr", s->lssr);
    cJSON_AddNumberToObject(j, "steps", (double)s->steps);
    cJSON_AddNumberToObject(j, "sync_steps", (double)s->sync_steps);
    cJSON_AddNumberToObject(j, "bytes_sent", s->bytes_sent);
    cJSON_AddNumberToObject(j, "compute_s", s->compute_s);
    cJSON_AddNumberToObject(j, "comm_s", s->comm_s);
    cJSON_AddNumberToObject(j, "wait_s", s->wait_s);
    if (pc->loss_tolerance > 0) {
        cJSON_AddNumberToObject(
            j, "dropped_fraction",
            pr->dlcp_bytes_total > 0 ? pr->dlcp_bytes_dropped / pr->dlcp_bytes_total : 0.0);
        cJSON_AddNumberToObject(j, "dlcp_time_saved_s", pr->dlcp_time_saved_s);
    }
    cJSON_AddNumberToObject(j, "epochs", s->epochs);
    cJSON_AddNumberToObject(j, "seed", (double)cfg->seed);
    cJSON_AddStringToObject(j, "device", dev);
    cJSON_AddStringToObject(j, "model", cfg->model);
    cJSON_AddStringToObject(j, "dataset", data_name);
    cJSON_AddNumberToObject(j, "batch", cfg->batch);
    cJSON_AddNumberToObject(j, "lr", options_learning_rate(cfg));
    cJSON_AddNumberToObject(j, "local_batch", policy_local_batch(pc));
    cJSON_AddNumberToObject(j, "params", (double)model_param_count(m));
    cJSON_AddNumberToObject(j, "flops_per_sample",
                            model_forward_flops_per_sample(m) + model_backward_flops_per_sample(m));
    if (pc->kind == POLICY_SSP || pc->kind == POLICY_ASP) {
        cJSON *gap = cJSON_AddArrayToObject(j, "staleness_clock_gap_hist");
        cJSON *upd = cJSON_AddArrayToObject(j, "staleness_updates_hist");
        int last_gap = 0, last_upd = 0;
        for (int i = 0; i < POLICY_STALENESS_BINS; i++) {
            if (pr->clock_gap_hist[i]) last_gap = i;
            if (pr->update_staleness_hist[i]) last_upd = i;
        }
        for (int i = 0; i <= last_gap; i++)
            cJSON_AddItemToArray(gap, cJSON_CreateNumber((double)pr->clock_gap_hist[i]));
        for (int i = 0; i <= last_upd; i++)
            cJSON_AddItemToArray(upd, cJSON_CreateNumber((double)pr->update_staleness_hist[i]));
        cJSON_AddNumberToObject(j, "staleness_max_clock_gap", (double)pr->max_clock_gap);
        cJSON_AddNumberToObject(j, "staleness_max_updates", (double)pr->max_update_staleness);
    }
    int rc = outputs_write_json(cfg, "summary.json", j);
    if (rc != SS_OK) fprintf(stderr, "syncsim: %s\n", ss_error_message());
    cJSON_Delete(j);
}

int run_emulation(const run_config *cfg, run_summary *sum, sim_blob *curve) {
    memset(sum, 0, sizeof *sum);
    sum->tta_s = -1;
    int rc;
    dataset train = {0}, test = {0};
    device *dev = NULL;
    sim_cluster *cluster = NULL;
    emulation *em = NULL;
    run_context ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.cfg = cfg;
    ctx.tta_s = -1;
    ctx.curve = curve;
    policy_config pc;
    policy_config_default(&pc);
    policy_result pr;
    memset(&pr, 0, sizeof pr);
    const double wall0 = outputs_wall_s();

    lr_schedule sched;
    if ((rc = lr_schedule_parse(&sched, cfg->lr_schedule)) != SS_OK) return rc;
    sched.base_lr = options_learning_rate(cfg);
    partition_kind part_kind;
    int labels_k = 0;
    const char *part_text =
        cfg->partition[0] ? cfg->partition : (!strcmp(cfg->policy, "selsync") ? "seldp" : "defdp");
    if ((rc = partition_parse(part_text, &part_kind, &labels_k)) != SS_OK) return rc;
    sim_network_model net_model;
    if ((rc = sim_network_model_parse("--network-model", cfg->network_model, &net_model)) != SS_OK)
        return rc;

    model_spec spec;
    if ((rc = run_open_data(cfg, &dev, &train, &test, &spec)) != SS_OK) goto done;
    long steps_per_epoch = 0;
    if ((rc = make_policy(cfg, train.n, &pc, &steps_per_epoch)) != SS_OK) goto done;

    if ((rc = outputs_begin(CMD_TRAIN, cfg)) != SS_OK) goto done;
    const int async = pc.kind == POLICY_SSP || pc.kind == POLICY_ASP;
    const int n_ps = (async || pc.use_ps) ? pc.ps_servers : 0;
    char platform[1024];
    if ((rc = prepare_platform(cfg, n_ps, platform, sizeof platform)) != SS_OK) goto done;
    sim_cluster_opts co = {.platform_path = platform,
                           .n_workers = cfg->workers,
                           .n_ps = n_ps,
                           .model = net_model,
                           .verbose = 0};
    if ((rc = sim_cluster_open(&co, &cluster)) != SS_OK) goto done;

    /* Injected samples join a worker's own b' = b / (1 + alpha beta N); room for them all. */
    const int local_batch = policy_local_batch(&pc);
    int max_batch = cfg->batch;
    if (pc.kind == POLICY_SELSYNC && pc.inject_alpha > 0) {
        int share = (int)lround(pc.inject_beta * local_batch);
        max_batch = local_batch + share * (cfg->workers - 1);
    }
    sched.steps_per_epoch = steps_per_epoch;
    sched.total_steps = pc.steps;
    emulation_config ec = {
        .dev = dev,
        .train = &train,
        .test = &test,
        .spec = &spec,
        .seed = cfg->seed,
        .workers = cfg->workers,
        .batch = local_batch,
        .max_batch = max_batch,
        .partition = part_kind,
        .labels_per_worker = labels_k,
        .schedule = sched,
        .momentum = cfg->momentum,
        .weight_decay = cfg->weight_decay,
        .eval_every = pc.eval_every,
        .last_step = pc.steps,
        .measure_time = pc.compute.mode == SIM_COMPUTE_MEASURED,
        .layer_norms = pc.kind == POLICY_SELSYNC && pc.variant == SELSYNC_VARIANT_CODE,
        .use_ps = async,
        .ps_servers = pc.ps_servers,
        .ps_lr_scale = cfg->server_lr_scale > 0 ? cfg->server_lr_scale : 1.0 / cfg->workers,
        .evaluate_ps = async,
        .on_eval = on_eval,
        .eval_ctx = &ctx,
        .interrupted = outputs_interrupted,
        .dump_gradients = cfg->dump_gradients,
        .out_dir = cfg->out_dir};
    if ((rc = emulation_create(&ec, &em)) != SS_OK) goto done;

    char path[1024];
    outputs_path(cfg, "metrics.csv", path, sizeof path);
    if ((rc = afile_open(&ctx.metrics, path)) != SS_OK) goto done;
    fprintf(ctx.metrics.fp,
            "step,epoch,sim_time_s,train_loss,test_loss,test_accuracy,sync_steps,bytes_sent\n");
    ctx.tracing = cfg->trace;
    if (ctx.tracing) {
        outputs_path(cfg, "steps.trace", path, sizeof path);
        if ((rc = afile_open(&ctx.trace, path)) != SS_OK) goto done;
        write_trace_header(cfg, &pc, emulation_source(em), &ctx.tw, ctx.trace.fp);
    }

    printf("syncsim train: %s, %d workers, seed %llu, platform %s\n", policy_kind_name(pc.kind),
           cfg->workers, (unsigned long long)cfg->seed, platform);
    printf("device %s | model %s: %zu parameters (%.2f MB per exchange) | %ld steps, "
           "evaluation every %ld\n",
           device_name(dev), cfg->model, model_param_count(emulation_replica(em, 0)),
           model_param_bytes(emulation_replica(em, 0)) / 1e6, pc.steps, pc.eval_every);
    fflush(stdout);

    outputs_install_interrupt_handler();
    ctx.total_steps = pc.steps;
    progress_begin(&ctx.bar, cfg->progress, pc.steps);
    step_source *src = emulation_source(em);
    rc = policy_run(&pc, cluster, src, on_record, &ctx, &pr);
    progress_end(&ctx.bar);
    if (rc != SS_OK) goto done;
    const step_counters final = {pr.sync_steps, pr.bytes_sent};
    emulation_evaluate_final(em, pr.sim_time_s, &final);

    const emulation_eval *last = emulation_last_eval(em);
    long div_step = 0;
    snprintf(sum->status, sizeof sum->status, "%s",
             emulation_diverged(em, &div_step) ? "diverged"
             : outputs_interrupted()           ? "interrupted"
                                               : "ok");
    snprintf(sum->policy, sizeof sum->policy, "%s", policy_kind_name(pc.kind));
    sum->workers = cfg->workers;
    sum->test_accuracy = last->test_accuracy;
    sum->test_loss = last->test_loss;
    sum->sim_time_s = pr.sim_time_s;
    sum->tta_s = ctx.tta_s;
    sum->steps = last->step;
    sum->sync_steps = pr.sync_steps;
    sum->lssr = last->step > 0 ? 1.0 - (double)pr.sync_steps / (double)last->step : 0;
    sum->bytes_sent = pr.bytes_sent;
    sum->compute_s = pr.compute_s;
    sum->comm_s = pr.comm_s;
    sum->wait_s = pr.wait_s;
    sum->epochs = emulation_samples(em) / (double)train.n;
    sum->wall_s = outputs_wall_s() - wall0;

    if ((rc = afile_commit(&ctx.metrics)) != SS_OK) goto done;
    if (ctx.tracing) trace_writer_end(&ctx.tw, pr.sim_time_s);
    if (ctx.tracing && (rc = afile_commit(&ctx.trace)) != SS_OK) goto done;
    /* The platform as the user named it, or the generated one relative to the run directory, so
     * that identical runs in different directories write identical summaries. */
    char platform_label[RUN_CONFIG_TEXT + 64];
    if (cfg->platform[0])
        snprintf(platform_label, sizeof platform_label, "%s", cfg->platform);
    else
        snprintf(platform_label, sizeof platform_label, "platform.xml (generated: %s, %s, %s)",
                 cfg->bandwidth, cfg->topology, cfg->gpu);
    write_summary_json(cfg, sum, &pc, &pr, device_name(dev), emulation_replica(em, 0),
                       platform_label, train.name);
    if (!strcmp(sum->status, "diverged")) {
        fprintf(stderr, "syncsim: the training loss became NaN or Inf at step %ld: diverged\n",
                div_step);
        rc = SS_EDIVERGED;
    } else if (!strcmp(sum->status, "interrupted")) {
        rc = SS_EINTERRUPT;
    }
    printf("%s: test accuracy %.4f, simulated time %.3f s (compute %.3f, comm %.3f, wait %.3f "
           "per worker), LSSR %.3f, %.3f GB sent, tta %s; wall %.1f s\n"
           "outputs: %s/{config.ini,platform.xml,metrics.csv,%ssummary.json}\n",
           sum->status, sum->test_accuracy, sum->sim_time_s, sum->compute_s, sum->comm_s,
           sum->wait_s, sum->lssr, sum->bytes_sent / 1e9, sum->tta_s >= 0 ? "reached" : "-",
           sum->wall_s, cfg->out_dir, ctx.tracing ? "steps.trace," : "");

done:
    free((void *)pc.slowdown);
    if (ctx.metrics.fp) afile_abort(&ctx.metrics);
    if (ctx.trace.fp) afile_abort(&ctx.trace);
    emulation_destroy(em);
    if (cluster) sim_cluster_close(cluster);
    dataset_free(&train);
    dataset_free(&test);
    device_close(dev);
    return rc;
}
