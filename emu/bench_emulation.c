/* `syncsim bench emulation` (emu/run.h): what the compute engine's threads give an emulated run.
 *
 * The same run (rq->cfg: policy, model, data, workers, epochs, seed) runs on one compute thread
 * and on --threads threads, each in its own process, its directory under OUT/bench-emulation/.
 * The figure is the samples every worker computed per second of wall time of the training loop
 * (the simulation with its evaluations; loading the data and building the replicas excluded).
 * Both runs must end with the same parameters: the engine's threads change the wall time only.
 * Each run also reports the wall seconds of the work its engine ran or split (emulation.h,
 * summed over its threads): on one thread, the rest of the loop is the serial share, which no
 * thread count shortens (Amdahl's law bounds the speedup on N threads by 1 / (s + (1 - s) / N)),
 * and the wall seconds of its evaluations of the consensus model, so that the speedup of the
 * training alone (the loop less its evaluations) shows too: a short run's evaluation of the whole
 * test set can take longer than its steps. */
#include "common/afile.h"
#include "common/engine.h"
#include "common/isolate.h"
#include "common/outputs.h"
#include "common/status.h"
#include "kernels/bench.h"
#include "emu/run_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct bench_em_result {
    double wall_s;  /* the training loop */
    double work_s;  /* of it, the engine's work, summed over its threads */
    double eval_s;  /* of it, the evaluations of the consensus model */
    double samples; /* computed by all workers */
    double sim_s;
    double accuracy;
    uint32_t checksum; /* of worker 0's final parameters */
    long steps;
    int threads;
} bench_em_result;

typedef struct bench_em_arg {
    const run_request *rq;
    int threads;
} bench_em_arg;

/* One run, in its own process: its result goes back through `out`. */
static int bench_em_run(void *varg, isolate_blob *out) {
    const bench_em_arg *a = varg;
    run_config cfg = *a->rq->cfg;
    snprintf(cfg.threads, sizeof cfg.threads, "%d", a->threads);
    int n = snprintf(cfg.out_dir, sizeof cfg.out_dir, "%s/bench-emulation/threads-%d",
                     a->rq->cfg->out_dir, a->threads);
    if (n < 0 || (size_t)n >= sizeof cfg.out_dir)
        return ss_error_set(SS_EUSAGE, "--out %s: too long a path", a->rq->cfg->out_dir);
    cfg.progress = 0;
    run_request rq = *a->rq;
    rq.cfg = &cfg;
    emu_run r;
    memset(&r, 0, sizeof r);
    r.rq = &rq;
    r.cfg = &cfg;
    r.ctx.cfg = &cfg;
    r.ctx.tta_s = -1;
    r.skip_worker_accuracy = 1;
    policy_config_default(&r.pc);
    int rc = run_open(&r);
    if (rc == SS_OK) rc = run_simulate(&r);
    if (rc == SS_OK) {
        bench_em_result res = {.wall_s = r.train_wall_s,
                               .work_s = emulation_work_seconds(r.em),
                               .eval_s = r.train_eval_s,
                               .samples = emulation_samples(r.em),
                               .sim_s = r.pr.sim_time_s,
                               .accuracy = emulation_last_eval(r.em)->test_accuracy,
                               .checksum = bench_param_checksum(r.dev, emulation_replica(r.em, 0)),
                               .steps = emulation_last_eval(r.em)->step,
                               .threads = emulation_threads(r.em)};
        isolate_blob_append(out, &res, sizeof res);
    }
    run_close(&r);
    return rc;
}

static int bench_em_one(const run_request *rq, int threads, bench_em_result *res) {
    bench_em_arg a = {rq, threads};
    isolate_blob blob = {0};
    int rc = isolate_call(bench_em_run, &a, &blob);
    if (rc != SS_OK) return rc;
    if (blob.bytes != sizeof *res) {
        isolate_blob_free(&blob);
        return ss_error_set(SS_EIO, "bench emulation: malformed result");
    }
    memcpy(res, blob.data, sizeof *res);
    isolate_blob_free(&blob);
    return SS_OK;
}

static const char *const csv_header = "model,policy,workers,threads,steps,samples,wall_s,"
                                      "samples_per_s,speedup,same_params,work_s,serial_share,"
                                      "eval_s,train_speedup";

/* The share of the loop's wall time outside the engine's work; meaningful on one thread, where
 * the work is not spread over several. */
static double serial_share(const bench_em_result *r) {
    const double s = r->wall_s > 0 ? 1.0 - r->work_s / r->wall_s : 0;
    return s > 0 ? s : 0;
}

/* The loop's wall time less its evaluations: the training alone. */
static double train_s(const bench_em_result *r) {
    const double t = r->wall_s - r->eval_s;
    return t > 0 ? t : 0;
}

static void print_row(FILE *out, int csv, const run_config *cfg, const bench_em_result *r,
                      const bench_em_result *base) {
    const double rate = r->wall_s > 0 ? r->samples / r->wall_s : 0;
    const double speedup = r->wall_s > 0 ? base->wall_s / r->wall_s : 0;
    const double train_speedup = train_s(r) > 0 ? train_s(base) / train_s(r) : 0;
    const char *same = r->checksum == base->checksum ? "yes" : "NO";
    if (csv) {
        fprintf(out, "%s,%s,%d,%d,%ld,%.0f,%.6f,%.2f,%.3f,%s,%.6f,", cfg->model, cfg->policy,
                cfg->workers, r->threads, r->steps, r->samples, r->wall_s, rate, speedup, same,
                r->work_s);
        if (r->threads == 1) fprintf(out, "%.4f", serial_share(r));
        fprintf(out, ",%.6f,%.3f\n", r->eval_s, train_speedup);
    } else {
        fprintf(out, "%-14s %-8s %7d %7d %7ld %9.0f %9.3f %11.1f %8.2fx %6s %9.3f %9.3f %8.2fx\n",
                cfg->model, cfg->policy, cfg->workers, r->threads, r->steps, r->samples, r->wall_s,
                rate, speedup, same, r->work_s, r->eval_s, train_speedup);
    }
}

static int write_csv(const char *path, const run_config *cfg, const bench_em_result r[2]) {
    afile f;
    int rc = afile_open(&f, path);
    if (rc != SS_OK) return rc;
    fprintf(f.fp, "%s\n", csv_header);
    for (int i = 0; i < 2; i++)
        print_row(f.fp, 1, cfg, &r[i], &r[0]);
    return afile_commit(&f);
}

int bench_emulation(const run_request *rq, const char *csv_path, FILE *out) {
    const run_config *cfg = rq->cfg;
    int threads;
    int rc = engine_parse_threads(cfg->threads, &threads);
    if (rc != SS_OK) return rc;
    if ((rc = run_check_emulated(rq)) != SS_OK) return rc;
    fprintf(out,
            "bench emulation: %s, %s on %s, %d workers, batch %d, %.3g epochs; 1 thread "
            "against %d\n",
            cfg->policy, cfg->model, cfg->dataset, cfg->workers, cfg->batch, cfg->epochs, threads);
    int logical = 0;
    const int physical = engine_physical_cores("/sys/devices/system/cpu", &logical);
    if (physical > 0)
        fprintf(out, "host: %d logical CPUs on %d physical cores%s\n", logical, physical,
                logical > physical ? " (more threads than cores share a core's units)" : "");
    else
        fprintf(out, "host: %d logical CPUs (the cores' topology is not readable)\n",
                engine_cores());
    fflush(out);
    bench_em_result r[2];
    if ((rc = bench_em_one(rq, 1, &r[0])) != SS_OK) return rc;
    if ((rc = bench_em_one(rq, threads, &r[1])) != SS_OK) return rc;
    fprintf(out, "%-14s %-8s %7s %7s %7s %9s %9s %11s %9s %6s %9s %9s %9s\n", "model", "policy",
            "workers", "threads", "steps", "samples", "wall (s)", "samples/s", "speedup", "same",
            "work (s)", "eval (s)", "training");
    for (int i = 0; i < 2; i++)
        print_row(out, 0, cfg, &r[i], &r[0]);
    const double s = serial_share(&r[0]);
    fprintf(out, "wall: the training loop (simulation and evaluations), each run in its own "
                 "process; same: worker 0's final parameters equal bit for bit; work: the "
                 "engine's work, summed over its threads; eval: the loop's time in evaluations of "
                 "the consensus model (their chunks that ran beside workers' steps not counted); "
                 "training: the speedup of the loop less its evaluations\n");
    fprintf(out,
            "serial share on 1 thread: %.1f %% of the loop outside the engine's work; Amdahl's "
            "bound on %d threads: %.2fx\n",
            100.0 * s, threads, 1.0 / (s + (1.0 - s) / threads));
    if (csv_path && (rc = write_csv(csv_path, cfg, r)) != SS_OK) return rc;
    if (r[0].checksum != r[1].checksum)
        return ss_error_set(SS_EIO,
                            "bench emulation: the runs on 1 and %d threads ended with "
                            "different parameters",
                            threads);
    return SS_OK;
}
