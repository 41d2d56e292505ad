/* `syncsim bench network` (see bench_network.h). */
#include "sim/bench_network.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/status.h"
#include "sim/collective.h"
#include "sim/isolate.h"
#include "sim/platform_gen.h"

#ifndef SS_SMPI_ALLREDUCE
#define SS_SMPI_ALLREDUCE ""
#endif

bench_network_opts bench_network_default(void) {
    bench_network_opts o = {.bytes = 1e8,
                            .n_sizes = 4,
                            .hosts = {16, 64, 256, 1024},
                            .bandwidth_bps = 25e9,
                            .latency_s = 5e-6,
                            .model = SIM_NETWORK_CM02,
                            .max_smpi_hosts = 256,
                            .smpirun = NULL,
                            .work_dir = NULL};
    return o;
}

static double wall_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One all-reduce by every worker of a fresh engine (run in a child). */
typedef struct bench_run {
    const char *platform;
    int n;
    double bytes;
    sim_network_model model;
    sim_allreduce_algo algo;
    sim_comm *world;
} bench_run;

typedef struct bench_worker {
    bench_run *run;
    int rank;
} bench_worker;

static void bench_worker_main(void *data) {
    bench_worker *w = data;
    sim_coll_opts co = {w->run->algo, 0};
    int st = sim_allreduce(w->run->world, w->rank, w->run->bytes, &co, NULL);
    SS_ASSERT(st == SS_OK);
}

static int bench_one(void *arg, sim_blob *result) {
    bench_run *r = arg;
    sim_cluster_opts o = {.platform_path = r->platform, .n_workers = r->n, .model = r->model};
    sim_cluster *c;
    int st = sim_cluster_open(&o, &c);
    if (st) return st;
    r->world = sim_cluster_world(c);
    bench_worker *ws = ss_malloc((size_t)r->n * sizeof *ws);
    for (int i = 0; i < r->n; i++) {
        ws[i] = (bench_worker){r, i};
        sim_actor_spawn("bench", i, sim_cluster_worker_host(c, i), bench_worker_main, &ws[i]);
    }
    double end_s = 0;
    st = sim_cluster_run(c, &end_s);
    sim_blob_append(result, &end_s, sizeof end_s);
    free(ws);
    sim_cluster_close(c);
    return st;
}

static int bench_sim(bench_run *r, double *sim_s, double *wall_s) {
    sim_blob b = {0};
    double t0 = wall_now_s();
    int st = sim_run_isolated(bench_one, r, &b);
    *wall_s = wall_now_s() - t0;
    if (st == SS_OK && b.bytes == sizeof *sim_s) memcpy(sim_s, b.data, sizeof *sim_s);
    sim_blob_free(&b);
    return st;
}

static int program_on_path(const char *name) {
    if (strchr(name, '/')) return access(name, X_OK) == 0;
    const char *path = getenv("PATH");
    if (!path) return 0;
    char dir[4096];
    for (const char *p = path; *p;) {
        size_t l = strcspn(p, ":");
        char file[4200];
        snprintf(dir, sizeof dir, "%.*s", (int)l, p);
        snprintf(file, sizeof file, "%s/%s", dir, name);
        if (access(file, X_OK) == 0) return 1;
        p += l;
        if (*p == ':') p++;
    }
    return 0;
}

/* Runs smpirun; *sim_s from the program's line. 0 ok, -1 with a reason in `why`. */
static int bench_smpi(const bench_network_opts *o, const char *smpirun, const char *platform,
                      const char *hostfile, int n, double *sim_s, double *wall_s, char *why,
                      size_t why_bytes) {
    char cmd[8192];
    /* Same algorithm (ring reduce-scatter + ring all-gather: "lr") and the same network model
     * and settings as syncsim's run; no computation charged (the reduction is a no-op); the
     * program has no globals, so no privatization. SMPI maps its shared-malloc buffers block by
     * block (2 buffers x ranks x blocks mappings): above ~60000 the blocks are made larger to stay
     * under vm.max_map_count. */
    char blocks[96] = "";
    double maps = 2.0 * n * ceil(o->bytes / 1048576.0);
    if (maps > 60000) {
        double block = 1048576.0;
        while (2.0 * n * ceil(o->bytes / block) > 60000)
            block *= 2;
        snprintf(blocks, sizeof blocks, " --cfg=smpi/shared-malloc-blocksize:%.0f", block);
    }
    snprintf(cmd, sizeof cmd,
             "'%s' -no-privatize -np %d -platform '%s' -hostfile '%s' --cfg=smpi/allreduce:lr "
             "--cfg=network/model:%s%s --cfg=smpi/simulate-computation:no%s "
             "--log=root.thresh:warning '%s' %.0f 2>&1",
             smpirun, n, platform, hostfile, sim_network_model_name(o->model),
             o->model == SIM_NETWORK_CM02 ? " --cfg=network/crosstraffic:0" : "", blocks,
             SS_SMPI_ALLREDUCE, o->bytes);
    double t0 = wall_now_s();
    FILE *p = popen(cmd, "r");
    if (!p) {
        snprintf(why, why_bytes, "cannot start smpirun: %s", strerror(errno));
        return -1;
    }
    char line[1024], last[1024] = "";
    int found = 0;
    while (fgets(line, sizeof line, p)) {
        if (sscanf(line, "smpi_allreduce_s %lf", sim_s) == 1) found = 1;
        snprintf(last, sizeof last, "%s", line);
    }
    int rc = pclose(p);
    *wall_s = wall_now_s() - t0;
    if (!found || rc != 0) {
        last[strcspn(last, "\n")] = '\0';
        snprintf(why, why_bytes, "smpirun failed (status %d): %s", rc, last);
        return -1;
    }
    return 0;
}

static int write_inputs(const bench_network_opts *o, const char *dir, int n, char *platform,
                        char *hostfile, size_t path_bytes) {
    snprintf(platform, path_bytes, "%s/bench_network_%d.xml", dir, n);
    snprintf(hostfile, path_bytes, "%s/bench_network_%d.hosts", dir, n);
    if (strchr(platform, '\''))
        return ss_error_set(SS_EUSAGE, "bench network: work directory '%s' contains a quote", dir);
    platform_gen_spec sp = platform_gen_default();
    sp.n_hosts = n;
    sp.bandwidth_bps = o->bandwidth_bps;
    sp.latency_s = o->latency_s;
    FILE *f = fopen(platform, "w");
    if (!f)
        return ss_error_set(SS_EIO, "bench network: cannot write %s: %s", platform,
                            strerror(errno));
    int st = platform_generate(&sp, f);
    if (fclose(f) != 0 && !st)
        st = ss_error_set(SS_EIO, "bench network: writing %s failed", platform);
    if (st) return st;
    f = fopen(hostfile, "w");
    if (!f)
        return ss_error_set(SS_EIO, "bench network: cannot write %s: %s", hostfile,
                            strerror(errno));
    for (int i = 0; i < n; i++)
        fprintf(f, "gpu-%d\n", i);
    if (fclose(f) != 0) return ss_error_set(SS_EIO, "bench network: writing %s failed", hostfile);
    return SS_OK;
}

int bench_network(const bench_network_opts *o, FILE *out) {
    SS_ASSERT(o != NULL && out != NULL);
    if (!(o->bytes >= 4) || fmod(o->bytes, 4) != 0 || o->bytes > 4e12)
        return ss_error_set(SS_EUSAGE,
                            "bench network: size %g bytes, need a multiple of 4 bytes "
                            "(float32 elements for SMPI)",
                            o->bytes);
    if (o->n_sizes < 1 || o->n_sizes > BENCH_NETWORK_MAX_SIZES)
        return ss_error_set(SS_EUSAGE, "bench network: %d host counts, need 1 to %d", o->n_sizes,
                            BENCH_NETWORK_MAX_SIZES);
    for (int i = 0; i < o->n_sizes; i++)
        if (o->hosts[i] < 2 || o->hosts[i] > 65536)
            return ss_error_set(SS_EUSAGE, "bench network: %d hosts, need 2 to 65536", o->hosts[i]);
    const char *dir = o->work_dir ? o->work_dir : "/tmp";
    const char *smpirun = o->smpirun ? o->smpirun : "smpirun";
    int have_smpirun = program_on_path(smpirun);
    int have_prog = SS_SMPI_ALLREDUCE[0] && access(SS_SMPI_ALLREDUCE, X_OK) == 0;
    char bw[64], lat[64];
    platform_format_bandwidth(o->bandwidth_bps, bw, sizeof bw);
    platform_format_latency(o->latency_s, lat, sizeof lat);
    fprintf(out,
            "# bench network: all-reduce of %.0f bytes, star platform, %s links, %s per link, "
            "network model %s\n",
            o->bytes, bw, lat, sim_network_model_name(o->model));
    fprintf(out, "# syncsim: ring (message-level, 2(N-1) steps) and ring-coarse; SMPI: "
                 "MPI_Allreduce with --cfg=smpi/allreduce:lr (ring reduce-scatter + ring "
                 "all-gather), same platform and model\n");
    if (!have_smpirun)
        fprintf(out, "# SMPI skipped: '%s' not found on PATH\n", smpirun);
    else if (!have_prog)
        fprintf(out, "# SMPI skipped: the SMPI program was not built (smpicc missing at build "
                     "time)\n");
    fprintf(out, "%6s %14s %10s %14s %10s %14s %10s %11s %11s %10s %10s\n", "hosts", "ring_sim_s",
            "ring_wall", "coarse_sim_s", "coarse_wall", "smpi_sim_s", "smpi_wall", "smpi/ring_w",
            "smpi/crs_w", "ring-smpi%", "crs-ring%");
    for (int i = 0; i < o->n_sizes; i++) {
        int n = o->hosts[i];
        char platform[1024], hostfile[1024];
        int st = write_inputs(o, dir, n, platform, hostfile, sizeof platform);
        if (st) return st;
        bench_run r = {platform, n, o->bytes, o->model, SIM_ALLREDUCE_RING, NULL};
        double ring_s = 0, ring_w = 0, coarse_s = 0, coarse_w = 0;
        if ((st = bench_sim(&r, &ring_s, &ring_w))) return st;
        r.algo = SIM_ALLREDUCE_RING_COARSE;
        if ((st = bench_sim(&r, &coarse_s, &coarse_w))) return st;
        double smpi_s = NAN, smpi_w = NAN;
        char why[1200] = "";
        if (have_smpirun && have_prog && n <= o->max_smpi_hosts) {
            if (bench_smpi(o, smpirun, platform, hostfile, n, &smpi_s, &smpi_w, why, sizeof why))
                smpi_s = smpi_w = NAN;
        } else if (have_smpirun && have_prog) {
            snprintf(why, sizeof why, "SMPI skipped for %d hosts (above --max-smpi-hosts %d)", n,
                     o->max_smpi_hosts);
        }
        fprintf(out, "%6d %14.9f %10.3f %14.9f %10.3f ", n, ring_s, ring_w, coarse_s, coarse_w);
        if (isnan(smpi_s))
            fprintf(out, "%14s %10s %11s %11s %10s", "-", "-", "-", "-", "-");
        else
            fprintf(out, "%14.9f %10.3f %11.1f %11.1f %10.3f", smpi_s, smpi_w, smpi_w / ring_w,
                    smpi_w / coarse_w, 100 * (ring_s - smpi_s) / smpi_s);
        fprintf(out, " %10.3f\n", 100 * (coarse_s - ring_s) / ring_s);
        if (why[0]) fprintf(out, "#   %s\n", why);
        fflush(out);
        remove(platform);
        remove(hostfile);
    }
    return SS_OK;
}
