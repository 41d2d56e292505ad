/* syncsim bench coupling: what coupling the training to SimGrid costs in wall time.
 *
 * The same BSP training (N workers, real gradients, gradient averaging every step, one final
 * evaluation) runs twice, each in its own process: once driven by SimGrid actors (the policy
 * protocol, collectives and compute-time model: what `syncsim train --policy bsp` does), and once
 * by a plain loop that calls the same emulation step source in the same order without any
 * simulation. Both end with the same parameters (checked), so the difference in wall time is the
 * simulation's overhead. */
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/outputs.h"
#include "common/status.h"
#include "emu/emulation.h"
#include "sim/cluster.h"
#include "sim/isolate.h"
#include "sim/platform_gen.h"
#include "sim/policy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct coupling_result {
    double wall_s;     /* training loop only (data loading and set-up excluded) */
    double sim_s;      /* simulated time (coupled only) */
    double accuracy;   /* final consensus accuracy */
    uint32_t checksum; /* of worker 0's final parameters */
    long steps;
} coupling_result;

typedef struct coupling_arg {
    const run_config *cfg;
    int coupled;
} coupling_arg;

static uint32_t checksum_params(device *dev, model *m) {
    size_t n = model_param_count(m);
    float *w = ss_malloc(sizeof(float) * n);
    device_download(dev, w, model_params(m), n);
    uint32_t h = 2166136261u; /* FNV-1a over the bytes */
    const unsigned char *p = (const unsigned char *)w;
    for (size_t i = 0; i < n * sizeof(float); i++)
        h = (h ^ p[i]) * 16777619u;
    free(w);
    return h;
}

static int coupling_run(void *varg, sim_blob *out) {
    const coupling_arg *a = varg;
    const run_config *cfg = a->cfg;
    dataset train, test;
    device *dev;
    char notice[256];
    int rc = device_open(cfg->device, &dev, notice, sizeof notice);
    if (rc != SS_OK) return rc;
    if ((rc = dataset_load(cfg->dataset, cfg->data_dir[0] ? cfg->data_dir : NULL, cfg->seed, &train,
                           &test)) != SS_OK)
        return rc;
    model_spec spec;
    if ((rc = model_spec_parse(&spec, cfg->model, train.c, train.h, train.w, train.classes)) !=
        SS_OK)
        return rc;
    const int n = cfg->workers;
    long steps = lround(cfg->epochs * (double)train.n / ((double)n * cfg->batch));
    if (steps < 1) steps = 1;
    lr_schedule sched;
    lr_schedule_parse(&sched, "constant");
    sched.base_lr = options_learning_rate(cfg);
    emulation_config ec = {.dev = dev,
                           .train = &train,
                           .test = &test,
                           .spec = &spec,
                           .seed = cfg->seed,
                           .workers = n,
                           .batch = cfg->batch,
                           .max_batch = cfg->batch,
                           .partition = PARTITION_DEFDP,
                           .schedule = sched,
                           .momentum = cfg->momentum,
                           .eval_every = steps,
                           .last_step = steps};
    emulation *em;
    if ((rc = emulation_create(&ec, &em)) != SS_OK) return rc;
    step_source *src = emulation_source(em);
    coupling_result res = {0};
    res.steps = steps;

    if (a->coupled) {
        char platform[64];
        snprintf(platform, sizeof platform, "/tmp/syncsim_coupling_%d.xml", (int)getpid());
        platform_gen_spec ps = platform_gen_default();
        ps.n_hosts = n;
        FILE *fp = fopen(platform, "w");
        if (!fp) return ss_error_set(SS_EIO, "cannot write %s", platform);
        rc = platform_generate(&ps, fp);
        fclose(fp);
        if (rc != SS_OK) return rc;
        sim_cluster_opts co = {.platform_path = platform, .n_workers = n};
        sim_cluster *cluster;
        if ((rc = sim_cluster_open(&co, &cluster)) != SS_OK) return rc;
        policy_config pc;
        policy_config_default(&pc);
        pc.kind = POLICY_BSP;
        pc.workers = n;
        pc.steps = steps;
        pc.batch = cfg->batch;
        pc.seed = cfg->seed;
        pc.eval_every = steps;
        policy_result pr;
        double t0 = outputs_wall_s();
        rc = policy_run(&pc, cluster, src, NULL, NULL, &pr);
        res.wall_s = outputs_wall_s() - t0;
        res.sim_s = pr.sim_time_s;
        unlink(platform);
        if (rc != SS_OK) return rc;
    } else {
        /* The same calls as BSP's worker protocol, in step order, without simulation. */
        double t0 = outputs_wall_s();
        for (long step = 1; step <= steps; step++) {
            for (int w = 0; w < n; w++) {
                step_cost cost;
                step_stats st;
                src->ops->compute(src->self, w, step, cfg->batch, &cost, &st);
            }
            for (int w = 0; w < n; w++) {
                src->ops->aggregate(src->self, w, step - 1, NULL, n, n, AGGREGATE_GRADS, NULL, 0);
                src->ops->apply_local(src->self, w, step);
                src->ops->step_done(src->self, w, step, 0.0);
            }
        }
        res.wall_s = outputs_wall_s() - t0;
    }
    res.accuracy = emulation_last_eval(em)->test_accuracy;
    res.checksum = checksum_params(dev, emulation_replica(em, 0));
    sim_blob_append(out, &res, sizeof res);
    emulation_destroy(em);
    dataset_free(&train);
    dataset_free(&test);
    device_close(dev);
    return SS_OK;
}

int cmd_bench_coupling(const run_config *cfg_in) {
    run_config cfg = *cfg_in;
    if (cfg.workers < 2) cfg.workers = 8;
    if (!options_was_set(&cfg, "epochs")) cfg.epochs = 1;
    coupling_result r[2];
    printf("bench coupling: %s on %s, %d workers, batch %d, %.3g epochs, BSP, %s\n", cfg.model,
           cfg.dataset, cfg.workers, cfg.batch, cfg.epochs, cfg.device);
    for (int coupled = 0; coupled < 2; coupled++) {
        coupling_arg a = {&cfg, coupled};
        sim_blob blob = {0};
        int rc = sim_run_isolated(coupling_run, &a, &blob);
        if (rc != SS_OK) return rc;
        if (blob.bytes != sizeof r[coupled]) {
            sim_blob_free(&blob);
            return ss_error_set(SS_EIO, "bench coupling: malformed result");
        }
        memcpy(&r[coupled], blob.data, sizeof r[coupled]);
        sim_blob_free(&blob);
    }
    printf("%-28s %10s %10s %12s %10s\n", "", "wall (s)", "steps", "accuracy", "params");
    printf("%-28s %10.3f %10ld %12.4f %10s\n", "without SimGrid (plain loop)", r[0].wall_s,
           r[0].steps, r[0].accuracy, "-");
    printf("%-28s %10.3f %10ld %12.4f %10s\n", "with SimGrid (BSP actors)", r[1].wall_s, r[1].steps,
           r[1].accuracy, r[0].checksum == r[1].checksum ? "identical" : "DIFFER");
    double overhead = r[0].wall_s > 0 ? (r[1].wall_s - r[0].wall_s) / r[0].wall_s : 0;
    printf("coupling overhead: %+.2f %% of the uncoupled wall time (goal: within 5 %%); simulated "
           "time %.3f s\n",
           100.0 * overhead, r[1].sim_s);
    if (r[0].checksum != r[1].checksum)
        return ss_error_set(SS_EIO, "bench coupling: coupled and uncoupled parameters differ");
    return SS_OK;
}
