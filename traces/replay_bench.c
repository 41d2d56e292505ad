/* `syncsim bench replay` (replay_command.h): BSP replays of a model profile at scale, each in its
 * own process, and the message-level ring against SMPI's all-reduce of the same bytes. */
#include "common/status.h"
#include "cli/bench_network.h"
#include "common/isolate.h"
#include "traces/profile.h"
#include "traces/replay.h"
#include "traces/replay_command.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct bench_case {
    const trace *t;
    replay_opts ro;
} bench_case;

static int bench_child(void *arg, isolate_blob *out) {
    bench_case *bc = arg;
    replay_result rr;
    int rc = replay_run(bc->t, &bc->ro, &rr);
    if (rc == SS_OK) isolate_blob_append(out, &rr, sizeof rr);
    return rc;
}

static int bench_one(const trace *t, int workers, sim_allreduce_algo algo, sim_network_model model,
                     replay_result *rr) {
    bench_case bc = {t, replay_opts_default()};
    bc.ro.workers = workers;
    bc.ro.model = model;
    sim_coll_opts co = {.algo = algo, .segment_bytes = 0};
    bc.ro.coll = &co;
    isolate_blob b = {0};
    int rc = isolate_call(bench_child, &bc, &b);
    if (rc == SS_OK && b.bytes == sizeof *rr) memcpy(rr, b.data, sizeof *rr);
    isolate_blob_free(&b);
    return rc;
}

/* SMPI's all-reduce of the same bytes, through `bench network`'s table (one row per size). */
static int smpi_allreduce(int max_smpi_hosts, double bytes, const int *sizes, int n, double *smpi_s,
                          double *smpi_wall_s) {
    bench_network_opts o = bench_network_default();
    o.bytes = 4.0 * floor(bytes / 4.0);
    o.n_sizes = n;
    for (int i = 0; i < n; i++)
        o.hosts[i] = sizes[i];
    o.max_smpi_hosts = max_smpi_hosts;
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

/* --hosts-list: worker counts, 1024,4096,65536 unless given. */
static int parse_sizes(const run_request *rq, int *sizes, int *n_sizes) {
    const run_config *cfg = rq->cfg;
    char list[RUN_CONFIG_TEXT];
    const int given = rq->was_set && rq->was_set(cfg, "hosts-list");
    snprintf(list, sizeof list, "%s", given ? cfg->bench_hosts : "1024,4096,65536");
    *n_sizes = 0;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        char *end;
        long v = strtol(tok, &end, 10);
        if (*end || v < 2 || v > 65536)
            return ss_error_set(SS_EUSAGE, "--hosts-list: '%s' is not a worker count in [2, 65536]",
                                tok);
        if (*n_sizes == BENCH_NETWORK_MAX_SIZES)
            return ss_error_set(SS_EUSAGE, "--hosts-list: at most %d values",
                                BENCH_NETWORK_MAX_SIZES);
        sizes[(*n_sizes)++] = (int)v;
    }
    return SS_OK;
}

/* Slope of the least-squares line through (x[i], y[i]): on log-log axes, the exponent k of
 * y ~ x^k. */
static double growth_exponent(const double *x, const double *y, int n) {
    double mx = 0, my = 0, sxy = 0, sxx = 0;
    for (int i = 0; i < n; i++)
        mx += x[i] / n, my += y[i] / n;
    for (int i = 0; i < n; i++)
        sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx);
    return sxx > 0 ? sxy / sxx : NAN;
}

/* Ring-coarse BSP replays of t at every size: simulated and wall time. */
static int bench_scaling(trace *t, const int *sizes, int n_sizes, long steps, long given_steps,
                         FILE *out) {
    fprintf(out, "# ring-coarse all-reduce (one flow per ring neighbour per phase)\n");
    fprintf(out, "%8s %8s %16s %12s %14s %14s\n", "workers", "steps", "sim_time_s", "wall_s",
            "wall_ms/step", "us/worker-step");
    fflush(out);
    double log_n[BENCH_NETWORK_MAX_SIZES], log_wall[BENCH_NETWORK_MAX_SIZES];
    for (int i = 0; i < n_sizes; i++) {
        /* 65536 workers x 1000 steps takes hours: larger runs default to fewer steps */
        long s = given_steps > 0 ? steps : sizes[i] > 4096 ? 20 : steps;
        t->steps_done = s;
        replay_result rr;
        int rc = bench_one(t, sizes[i], SIM_ALLREDUCE_RING_COARSE, SIM_NETWORK_LV08, &rr);
        if (rc != SS_OK) return rc;
        fprintf(out, "%8d %8ld %16.9g %12.3f %14.3f %14.3f\n", sizes[i], s, rr.res.sim_time_s,
                rr.wall_s, 1e3 * rr.wall_s / (double)s, 1e6 * rr.wall_s / ((double)s * sizes[i]));
        fflush(out);
        log_n[i] = log((double)sizes[i]);
        log_wall[i] = log(rr.wall_s / (double)s);
    }
    if (n_sizes >= 2)
        fprintf(out,
                "# fitted growth of wall time per step: ~ N^%.2f (least squares on log-log, "
                "%d sizes; N log N is ~ N^1.1 over this range)\n",
                growth_exponent(log_n, log_wall, n_sizes), n_sizes);
    return SS_OK;
}

/* Message-level ring against SMPI's ring all-reduce, same bytes, same platform, CM02. */
static int bench_smpi(trace *t, const model_profile *prof, long given_steps, int max_smpi_hosts,
                      FILE *out) {
    const int smpi_sizes[2] = {64, 256};
    const long smpi_steps = given_steps > 0 && given_steps < 20 ? given_steps : 20;
    fprintf(out,
            "# message-level ring replay (%ld steps, CM02) against SMPI MPI_Allreduce "
            "(smpi/allreduce:lr, one call) of the same %.0f bytes\n",
            smpi_steps, 4.0 * floor(prof->params));
    double smpi_s[2], smpi_w[2];
    int rc = smpi_allreduce(max_smpi_hosts, 4.0 * prof->params, smpi_sizes, 2, smpi_s, smpi_w);
    if (rc != SS_OK) return rc;
    fprintf(out, "%8s %16s %16s %12s %14s %14s %10s\n", "workers", "replay_comm_s", "smpi_allred_s",
            "diff_%", "replay_wall/st", "smpi_wall", "wall_ratio");
    for (int i = 0; i < 2; i++) {
        t->steps_done = smpi_steps;
        replay_result rr;
        if ((rc = bench_one(t, smpi_sizes[i], SIM_ALLREDUCE_RING, SIM_NETWORK_CM02, &rr)))
            return rc;
        /* comm per step: the all-reduce time of one step as the replay charges it */
        double comm = (rr.res.comm_s + rr.res.wait_s) / (double)smpi_steps;
        double wall = rr.wall_s / (double)smpi_steps;
        fprintf(out, "%8d %16.9g ", smpi_sizes[i], comm);
        if (isnan(smpi_s[i]))
            fprintf(out, "%16s %12s %14.4f %14s %10s\n", "-", "-", wall, "-", "-");
        else
            fprintf(out, "%16.9g %12.3f %14.4f %14.3f %10.2f\n", smpi_s[i],
                    100 * (comm - smpi_s[i]) / smpi_s[i], wall, smpi_w[i], smpi_w[i] / wall);
        fflush(out);
    }
    return SS_OK;
}

int replay_bench(const run_request *rq, FILE *out) {
    const run_config *cfg = rq->cfg;
    model_profile prof;
    int rc = profile_find(cfg->replay_profile[0] ? cfg->replay_profile : "resnet101", &prof);
    if (rc != SS_OK) return rc;
    int sizes[BENCH_NETWORK_MAX_SIZES], n_sizes = 0;
    if ((rc = parse_sizes(rq, sizes, &n_sizes)) != SS_OK) return rc;
    const long steps = cfg->replay_steps > 0 ? cfg->replay_steps : 1000;
    const int batch_given = rq->was_set && rq->was_set(cfg, "batch");
    const int batch = batch_given || prof.batch <= 0 ? cfg->batch : prof.batch;
    policy_config pc;
    policy_config_default(&pc);
    pc.kind = POLICY_BSP;
    pc.batch = batch;
    pc.steps = steps;
    pc.eval_every = steps;
    pc.overlap = POLICY_OVERLAP_OFF; /* the benchmark times one whole-gradient all-reduce a step */
    trace *t;
    rc = profile_synthesize(&prof, &pc, NULL, &t);
    profile_free(&prof);
    if (rc != SS_OK) return rc;
    const platform_gen_spec gen = replay_opts_default().gen;
    char bw[32], lat[32];
    platform_format_bandwidth(gen.bandwidth_Bps, bw, sizeof bw);
    platform_format_latency(gen.latency_s, lat, sizeof lat);
    fprintf(out,
            "# bench replay: BSP, %s (%.4g parameters, %.4g MB per exchange), batch %d, star "
            "platform %s %s per link, %s hosts, LV08; each run in its own process (one core)\n",
            prof.name, prof.params, 4 * prof.params / 1e6, batch, bw, lat,
            platform_gpu_name(gen.gpu));
    rc = bench_scaling(t, sizes, n_sizes, steps, cfg->replay_steps, out);
    if (rc == SS_OK && cfg->max_smpi_hosts >= 64)
        rc = bench_smpi(t, &prof, cfg->replay_steps, cfg->max_smpi_hosts, out);
    trace_free(t);
    return rc;
}
