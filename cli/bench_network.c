/* `syncsim bench network` (see bench_network.h). */
#include "cli/bench_network.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/options.h"
#include "common/afile.h"
#include "common/number.h"
#include "common/csv.h"
#include "common/run_request.h"
#include "common/status.h"
#include "sim/net/cluster.h"
#include "sim/net/coll/collective.h"
#include "common/isolate.h"
#include "sim/platform/platform_gen.h"

#include <simgrid/comm.h>
#include <simgrid/mailbox.h>

#ifndef SS_SMPI_ALLREDUCE
#define SS_SMPI_ALLREDUCE ""
#endif

bench_network_opts bench_network_default(void) {
    bench_network_opts o = {.bytes = 1e8,
                            .n_sizes = 4,
                            .hosts = {16, 64, 256, 1024},
                            .bandwidth_Bps = 25e9 / 8,
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
    sim_group *world;
    int incast; /* 1: every worker pushes `bytes` to server 0 at once (BENCH_INCAST) */
    sim_nccl_protocol protocol;
    int channels; /* ring's channels (0 or 1: one ring) */
} bench_run;

typedef struct bench_worker {
    bench_run *run;
    int rank;
} bench_worker;

static void bench_worker_main(void *data) {
    bench_worker *w = data;
    sim_coll_opts co = {
        .algo = w->run->algo, .protocol = w->run->protocol, .channels = w->run->channels};
    int st = sim_allreduce(w->run->world, w->rank, w->run->bytes, &co, NULL);
    SS_ASSERT(st == SS_OK);
}

static int incast_token;

/* Incast: worker i puts its push on mailbox "push.i"; the server posts every receive before
 * waiting, so all pushes start at time 0 and share the server's link. */
static void incast_worker_main(void *data) {
    bench_worker *w = data;
    char name[32];
    snprintf(name, sizeof name, "push.%d", w->rank);
    sg_mailbox_put(sg_mailbox_by_name(name), &incast_token, (long)w->run->bytes);
}

static void incast_server_main(void *data) {
    bench_run *r = data;
    sg_comm_t *comms = ss_malloc((size_t)r->n * sizeof *comms);
    void **got = ss_malloc((size_t)r->n * sizeof *got);
    for (int i = 0; i < r->n; i++) {
        char name[32];
        snprintf(name, sizeof name, "push.%d", i);
        comms[i] = sg_mailbox_get_async(sg_mailbox_by_name(name), &got[i]);
    }
    sg_comm_wait_all(comms, (size_t)r->n);
    free(comms);
    free(got);
}

static int bench_one(void *arg, isolate_blob *result) {
    bench_run *r = arg;
    sim_cluster_opts o = {
        .platform_path = r->platform, .n_workers = r->n, .n_ps = r->incast, .model = r->model};
    sim_cluster *c;
    int st = sim_cluster_open(&o, &c);
    if (st) return st;
    r->world = sim_cluster_world(c);
    bench_worker *ws = ss_malloc((size_t)r->n * sizeof *ws);
    for (int i = 0; i < r->n; i++) {
        ws[i] = (bench_worker){r, i};
        sim_actor_spawn("bench", i, sim_cluster_worker_host(c, i),
                        r->incast ? incast_worker_main : bench_worker_main, &ws[i]);
    }
    if (r->incast) sim_actor_spawn("server", 0, sim_cluster_ps_host(c, 0), incast_server_main, r);
    double end_s = 0;
    st = sim_cluster_simulate(c, &end_s);
    isolate_blob_append(result, &end_s, sizeof end_s);
    /* what the all-reduce ran: auto's algorithm, and the protocol of NCCL's algorithms */
    char ran[BENCH_RAN_LEN] = "";
    if (st == SS_OK && !r->incast) {
        const sim_coll_opts co = {
            .algo = r->algo, .protocol = r->protocol, .channels = r->channels};
        const sim_allreduce_algo a = r->algo == SIM_ALLREDUCE_AUTO
                                         ? sim_allreduce_auto_pick(r->world, r->bytes, &co)
                                         : r->algo;
        const sim_nccl_protocol p = sim_allreduce_protocol(r->world, r->algo, a, r->bytes, &co);
        const int ch = r->algo == SIM_ALLREDUCE_AUTO
                           ? sim_allreduce_auto_algo_channels(r->world, &co, a)
                           : r->channels;
        char channels[24] = "";
        if (a == SIM_ALLREDUCE_RING && ch > 1) snprintf(channels, sizeof channels, "x%d", ch);
        if (a == SIM_ALLREDUCE_DBTREE && ch > 2) snprintf(channels, sizeof channels, "x%d", ch);
        snprintf(ran, sizeof ran, "%s%s%s%s", sim_allreduce_algo_name(a), channels,
                 p != SIM_PROTOCOL_AUTO ? "/" : "",
                 p != SIM_PROTOCOL_AUTO ? sim_nccl_protocol_name(p) : "");
    }
    isolate_blob_append(result, ran, sizeof ran);
    free(ws);
    sim_cluster_close(c);
    return st;
}

static int bench_sim(bench_run *r, double *sim_s, double *wall_s, char *ran) {
    isolate_blob b = {0};
    double t0 = wall_now_s();
    int st = isolate_call(bench_one, r, &b);
    *wall_s = wall_now_s() - t0;
    if (st == SS_OK && b.bytes == sizeof *sim_s + BENCH_RAN_LEN) {
        memcpy(sim_s, b.data, sizeof *sim_s);
        if (ran) {
            memcpy(ran, (const char *)b.data + sizeof *sim_s, BENCH_RAN_LEN);
            ran[BENCH_RAN_LEN - 1] = 0;
        }
    }
    isolate_blob_free(&b);
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
    sp.bandwidth_Bps = o->bandwidth_Bps;
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

/* The measurements of one row on its written platform and host files, and the row printed. */
static int smpi_row_run(const bench_network_opts *o, const char *platform, const char *hostfile,
                        int n, int smpi, const char *smpirun, FILE *out) {
    bench_run r = {platform, n, o->bytes,          o->model, SIM_ALLREDUCE_RING,
                   NULL,     0, SIM_PROTOCOL_AUTO, 1};
    double ring_s = 0, ring_w = 0, coarse_s = 0, coarse_w = 0;
    int st;
    if ((st = bench_sim(&r, &ring_s, &ring_w, NULL))) return st;
    r.algo = SIM_ALLREDUCE_RING_COARSE;
    if ((st = bench_sim(&r, &coarse_s, &coarse_w, NULL))) return st;
    double smpi_s = NAN, smpi_w = NAN;
    char why[1200] = "";
    if (smpi && n <= o->max_smpi_hosts) {
        if (bench_smpi(o, smpirun, platform, hostfile, n, &smpi_s, &smpi_w, why, sizeof why))
            smpi_s = smpi_w = NAN;
    } else if (smpi) {
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
    return SS_OK;
}

/* One row of the SMPI comparison: n hosts, syncsim's ring and ring-coarse, and SMPI's when it
 * can run; its platform and host files are removed whatever happens. */
static int smpi_row(const bench_network_opts *o, const char *dir, int n, int smpi,
                    const char *smpirun, FILE *out) {
    char platform[1024], hostfile[1024];
    int st = write_inputs(o, dir, n, platform, hostfile, sizeof platform);
    if (st == SS_OK) st = smpi_row_run(o, platform, hostfile, n, smpi, smpirun, out);
    remove(platform);
    remove(hostfile);
    return st;
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
    const char *smpirun = o->smpirun ? o->smpirun : "smpirun";
    int have_smpirun = program_on_path(smpirun);
    int have_prog = SS_SMPI_ALLREDUCE[0] && access(SS_SMPI_ALLREDUCE, X_OK) == 0;
    char bw[64], lat[64];
    platform_format_bandwidth(o->bandwidth_Bps, bw, sizeof bw);
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
    char scratch[1100] = "";
    const char *dir = o->work_dir;
    if (!dir) { /* the files smpirun reads, in a directory of this run's own */
        snprintf(scratch, sizeof scratch, "%s/syncsim-smpi-XXXXXX", platform_temp_dir());
        if (!mkdtemp(scratch))
            return ss_error_set(SS_EIO,
                                "bench network: cannot create %s: %s (TMPDIR names the "
                                "directory)",
                                scratch, strerror(errno));
        dir = scratch;
    }
    int st = SS_OK;
    for (int i = 0; i < o->n_sizes && st == SS_OK; i++)
        st = smpi_row(o, dir, o->hosts[i], have_smpirun && have_prog, smpirun, out);
    if (scratch[0]) rmdir(scratch);
    return st;
}

/* ---- nccl-tests-like table over message sizes (bench_network.h) ---- */

int bench_network_allreduce_protocol(const char *platform, int n, double bytes,
                                     sim_network_model model, int algo, sim_nccl_protocol protocol,
                                     double *sim_s, double *wall_s, char *ran) {
    return bench_network_allreduce_channels(platform, n, bytes, model, algo, protocol, 1, sim_s,
                                            wall_s, ran);
}

int bench_network_allreduce_channels(const char *platform, int n, double bytes,
                                     sim_network_model model, int algo, sim_nccl_protocol protocol,
                                     int channels, double *sim_s, double *wall_s, char *ran) {
    int incast = algo == BENCH_INCAST;
    bench_run r = {
        platform, n,      bytes,    model,   incast ? SIM_ALLREDUCE_RING : (sim_allreduce_algo)algo,
        NULL,     incast, protocol, channels};
    *sim_s = NAN;
    if (ran) ran[0] = 0;
    return bench_sim(&r, sim_s, wall_s, ran);
}

int bench_network_allreduce(const char *platform, int n, double bytes, sim_network_model model,
                            int algo, double *sim_s, double *wall_s) {
    return bench_network_allreduce_protocol(platform, n, bytes, model, algo, SIM_PROTOCOL_AUTO,
                                            sim_s, wall_s, NULL);
}

/* One byte size with its unit ("8", "1KiB", "1GB"); -1 if not one. */
static int parse_one_size(const char *text, double *bytes) {
    static const struct {
        const char *unit;
        double scale;
    } units[] = {{"", 1},
                 {"B", 1},
                 {"K", 1024.0},
                 {"KiB", 1024.0},
                 {"M", 1048576.0},
                 {"MiB", 1048576.0},
                 {"G", 1073741824.0},
                 {"GiB", 1073741824.0},
                 {"T", 1099511627776.0},
                 {"TiB", 1099511627776.0},
                 {"KB", 1e3},
                 {"MB", 1e6},
                 {"GB", 1e9},
                 {"TB", 1e12}};
    const char *end;
    double v;
    if (number_parse_prefix(text, &v, &end) != 0) return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].unit)) {
            *bytes = v * units[i].scale;
            return *bytes >= 1 && *bytes <= 1e13 && floor(*bytes) == *bytes ? 0 : -1;
        }
    return -1;
}

static int sizes_usage(const char *option, const char *text) {
    return ss_error_set(SS_EUSAGE,
                        "%s: '%s' is not a size list (1KiB,1GiB) or range (8:1GiB:x2, "
                        "1MiB:8MiB:+1MiB); sizes are whole bytes in [1, 1e13] with unit B, K/KiB, "
                        "M/MiB, G/GiB, T/TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000)",
                        option, text);
}

static int parse_size_range(const char *option, const char *text, double *sizes, int max, int *n) {
    char buf[256], *a = buf, *b, *c;
    snprintf(buf, sizeof buf, "%s", text);
    if (!(b = strchr(a, ':')) || !(c = strchr(b + 1, ':'))) return sizes_usage(option, text);
    *b++ = '\0';
    *c++ = '\0';
    double lo, hi, step;
    if (parse_one_size(a, &lo) || parse_one_size(b, &hi) || hi < lo || (c[0] != 'x' && c[0] != '+'))
        return sizes_usage(option, text);
    if (c[0] == 'x') {
        if (number_parse_double(c + 1, &step) != 0 || !(step > 1)) return sizes_usage(option, text);
    } else if (parse_one_size(c + 1, &step)) {
        return sizes_usage(option, text);
    }
    *n = 0;
    for (double s = lo; s <= hi; s = c[0] == 'x' ? floor(s * step) : s + step) {
        if (*n == max)
            return ss_error_set(SS_EUSAGE, "%s: '%s' gives more than %d sizes", option, text, max);
        sizes[(*n)++] = s;
    }
    return SS_OK;
}

int bench_parse_sizes(const char *option, const char *text, double *sizes, int max, int *n) {
    if (strchr(text, ':')) return parse_size_range(option, text, sizes, max, n);
    char buf[1024];
    if (strlen(text) >= sizeof buf) return sizes_usage(option, text);
    snprintf(buf, sizeof buf, "%s", text);
    *n = 0;
    for (char *tok = buf;;) { /* every item, empty ones too ("8,,16" is a typo) */
        char *comma = strchr(tok, ',');
        if (comma) *comma = '\0';
        if (*n == max) return ss_error_set(SS_EUSAGE, "%s: more than %d sizes", option, max);
        if (parse_one_size(tok, &sizes[*n])) return sizes_usage(option, text);
        (*n)++;
        if (!comma) break;
        tok = comma + 1;
    }
    return SS_OK;
}

int bench_network_sizes(const bench_sizes_opts *o, bench_sizes_row *rows) {
    if (o->n_workers < 2)
        return ss_error_set(SS_EUSAGE, "bench network: %d workers, need at least 2", o->n_workers);
    if (o->n_sizes < 1 || o->n_sizes > BENCH_SIZES_MAX)
        return ss_error_set(SS_EUSAGE, "bench network: %d sizes, need 1 to %d", o->n_sizes,
                            BENCH_SIZES_MAX);
    const double n = o->n_workers;
    for (int i = 0; i < o->n_sizes; i++) {
        double sim_s, wall_s;
        char ran[BENCH_RAN_LEN];
        int st = bench_network_allreduce_channels(o->platform, o->n_workers, o->sizes_bytes[i],
                                                  o->model, o->algo, o->protocol, o->channels,
                                                  &sim_s, &wall_s, ran);
        if (st) return st;
        double algbw = o->sizes_bytes[i] / sim_s / 1e9;
        /* incast: the rate into the server, n pushes of size bytes over time */
        double busbw = o->algo == BENCH_INCAST ? n * algbw : algbw * 2.0 * (n - 1) / n;
        rows[i] = (bench_sizes_row){o->sizes_bytes[i], 1e6 * sim_s, algbw, busbw, wall_s, ""};
        snprintf(rows[i].ran, sizeof rows[i].ran, "%s", ran);
    }
    return SS_OK;
}

static const char *algo_label(int algo) {
    return algo == BENCH_INCAST ? "ps" : sim_allreduce_algo_name((sim_allreduce_algo)algo);
}

void bench_sizes_print(const bench_sizes_opts *o, const bench_sizes_row *rows, FILE *out) {
    char channels[32] = "";
    if (o->channels > 1) snprintf(channels, sizeof channels, ", %d channels", o->channels);
    if (o->algo == BENCH_INCAST)
        fprintf(out,
                "# bench network: incast, %d workers each push size bytes to one parameter "
                "server at once, on %s, network model %s\n"
                "# time = last push received; algbw = size/time, busbw = workers x size/time "
                "(the server's receive rate)\n",
                o->n_workers, o->platform, sim_network_model_name(o->model));
    else
        fprintf(out,
                "# bench network: all-reduce (%s%s) of %d workers on %s, network model %s\n"
                "# algbw = size/time, busbw = algbw x 2(n-1)/n (nccl-tests doc/PERFORMANCE.md)\n",
                sim_allreduce_algo_name((sim_allreduce_algo)o->algo), channels, o->n_workers,
                o->platform, sim_network_model_name(o->model));
    fprintf(out, "#%14s %14s %6s %12s %10s %10s %10s  %s\n", "size (B)", "count", "type",
            "time (us)", "algbw", "busbw", "wall (s)", "ran");
    for (int i = 0; i < o->n_sizes; i++)
        fprintf(out, "%15.0f %14.0f %6s %12.2f %10.2f %10.2f %10.3f  %s\n", rows[i].size_bytes,
                floor(rows[i].size_bytes / 4), "float", rows[i].time_us, rows[i].algbw_GBps,
                rows[i].busbw_GBps, rows[i].wall_s, rows[i].ran[0] ? rows[i].ran : "-");
}

int bench_sizes_write_csv(const bench_sizes_opts *o, const bench_sizes_row *rows,
                          const char *path) {
    afile f;
    int st = afile_open(&f, path);
    if (st) return st;
    fprintf(f.fp, "size_bytes,collective,time_us,algbw_GBps,busbw_GBps\n");
    const char *name = algo_label(o->algo);
    for (int i = 0; i < o->n_sizes; i++) {
        fprintf(f.fp, "%.0f,", rows[i].size_bytes);
        csv_write_field(f.fp, name);
        fputc(',', f.fp);
        csv_write_numbers(f.fp, "%.6f %.6f %.6f",
                          (const double[]){rows[i].time_us, rows[i].algbw_GBps, rows[i].busbw_GBps},
                          3);
    }
    return afile_commit(&f);
}

/* The platform of the table: --platform (path), or a generated one in a temporary file (*tmp,
 * closed by the caller, which passes it closed: {.fd = -1}; path is its name for SimGrid). */
static int resolve_platform(const run_request *rq, int n_ps, int *n_workers, char *path,
                            size_t path_bytes, platform_temp *tmp) {
    const run_config *cfg = rq->cfg;
    const int workers_set = rq->was_set && rq->was_set(cfg, "workers");
    if (cfg->platform[0]) {
        sim_platform_info info;
        int st = sim_platform_check(cfg->platform, &info);
        if (st) return st;
        /* without role=ps hosts, the server is the host after the workers (cluster.h) */
        int hosts = info.n_hosts - (info.n_ps_hosts ? info.n_ps_hosts : n_ps);
        sim_platform_info_free(&info);
        *n_workers = workers_set ? cfg->workers : hosts;
        snprintf(path, path_bytes, "%s", cfg->platform);
        return SS_OK;
    }
    *n_workers = workers_set ? cfg->workers : 16;
    platform_gen_spec spec;
    int st = platform_spec_from_config(cfg, *n_workers, n_ps, &spec);
    if (st) return st;
    if ((st = platform_temp_generate(&spec, tmp))) return st;
    snprintf(path, path_bytes, "%s", tmp->path);
    return SS_OK;
}

static int check_platform_options(const run_request *rq) {
    static const char *gen[] = {"bandwidth", "latency", "topology", "gpu", "gpu-efficiency"};
    if (!rq->cfg->platform[0] || !rq->was_set) return SS_OK;
    for (size_t i = 0; i < sizeof gen / sizeof gen[0]; i++)
        if (rq->was_set(rq->cfg, gen[i]))
            return ss_error_set(SS_EUSAGE,
                                "bench network: --platform FILE contradicts --%s, which "
                                "describes a generated platform",
                                gen[i]);
    return SS_OK;
}

static int run_smpi_comparison(const run_config *cfg, FILE *out) {
    bench_network_opts o = bench_network_default();
    double hosts[BENCH_NETWORK_MAX_SIZES];
    int rc = number_parse_list(cfg->bench_hosts, 1, hosts, BENCH_NETWORK_MAX_SIZES, &o.n_sizes);
    if (rc == -2)
        return ss_error_set(SS_EUSAGE, "--hosts-list: at most %d values", BENCH_NETWORK_MAX_SIZES);
    for (int i = 0; rc == 0 && i < o.n_sizes; i++)
        if (hosts[i] < 2 || hosts[i] > 65536) rc = -1;
    if (rc != 0)
        return ss_error_set(SS_EUSAGE,
                            "--hosts-list: '%s' is not a list of host counts in [2, 65536] "
                            "(e.g. 16,64,256)",
                            cfg->bench_hosts);
    for (int i = 0; i < o.n_sizes; i++)
        o.hosts[i] = (int)hosts[i];
    o.bytes = cfg->bench_bytes;
    o.max_smpi_hosts = cfg->max_smpi_hosts;
    return bench_network(&o, out);
}

static int table_options(const run_request *rq, bench_sizes_opts *o) {
    const run_config *cfg = rq->cfg;
    memset(o, 0, sizeof *o);
    int st = bench_parse_sizes("--sizes", cfg->bench_sizes, o->sizes_bytes, BENCH_SIZES_MAX,
                               &o->n_sizes);
    if (st) return st;
    if ((st = sim_network_model_parse("--network-model", cfg->network_model, &o->model))) return st;
    sim_allreduce_algo algo = SIM_ALLREDUCE_AUTO;
    if (!strcmp(cfg->collective, "ps"))
        o->algo = BENCH_INCAST;
    else if ((st = sim_allreduce_algo_parse("--collective", cfg->collective, &algo)))
        return st;
    else
        o->algo = (int)algo;
    if ((st = sim_nccl_protocol_parse("--protocol", cfg->protocol, &o->protocol))) return st;
    o->channels = cfg->channels > 0 ? cfg->channels : 1;
    if ((st = coll_check_channels(o->channels, algo, o->algo == BENCH_INCAST, cfg->collective)))
        return st;
    if (o->protocol != SIM_PROTOCOL_AUTO &&
        (o->algo == BENCH_INCAST || !coll_takes_protocol(algo, o->protocol)))
        return ss_error_set(SS_EUSAGE,
                            "--protocol %s applies to --collective auto, hier, hier-coarse, "
                            "dbtree, ring or ring-coarse (NCCL's algorithms), not %s",
                            cfg->protocol, cfg->collective);
    return check_platform_options(rq);
}

/* The options of one form of bench network that the other does not read: refused (exit 2)
 * rather than ignored. --smpi reads these alone; the size table every other option of the
 * subcommand (the option table's rows). */
static int smpi_reads(const char *name) {
    static const char *const names[] = {"smpi", "hosts-list", "bytes", "max-smpi-hosts"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(name, names[i])) return 1;
    return 0;
}

static int check_form_options(const run_request *rq) {
    if (!rq->was_set) return SS_OK;
    const int smpi = rq->cfg->bench_smpi;
    for (int i = 0; i < options_row_count(); i++) {
        options_row_info row;
        options_row_at(i, &row);
        if (!(row.commands & CMD_BENCH_NETWORK) || !strcmp(row.name, "help") ||
            !strcmp(row.name, "smpi") || !rq->was_set(rq->cfg, row.name) ||
            smpi_reads(row.name) == smpi)
            continue;
        if (smpi)
            return ss_error_set(SS_EUSAGE,
                                "--%s does not apply to bench network --smpi, which compares the "
                                "ring (message-level and coarse) with SMPI's MPI_Allreduce of "
                                "--bytes on star platforms of --hosts-list hosts; drop --%s, or "
                                "--smpi for the size table",
                                row.name, row.name);
        return ss_error_set(SS_EUSAGE,
                            "--%s applies to bench network --smpi only (the size table takes "
                            "--sizes and --workers)",
                            row.name);
    }
    return SS_OK;
}

int bench_network_run(const run_request *rq, FILE *out) {
    const run_config *cfg = rq->cfg;
    int form = check_form_options(rq);
    if (form) return form;
    if (cfg->bench_smpi) return run_smpi_comparison(cfg, out);
    bench_sizes_opts o;
    int st = table_options(rq, &o);
    platform_temp tmp = {.fd = -1};
    if (st) return st;
    char path[1100];
    if ((st = resolve_platform(rq, o.algo == BENCH_INCAST, &o.n_workers, path, sizeof path, &tmp)))
        return st;
    o.platform = cfg->platform[0] ? cfg->platform : "a generated platform";
    bench_sizes_row *rows = ss_malloc(sizeof *rows * (size_t)o.n_sizes);
    const char *shown = o.platform;
    o.platform = path;
    st = bench_network_sizes(&o, rows);
    platform_temp_close(&tmp);
    o.platform = shown;
    if (st == SS_OK && rq->was_set &&
        (rq->was_set(cfg, "gpu") || rq->was_set(cfg, "gpu-efficiency")))
        fprintf(out,
                "# --gpu %s (efficiency %g): the generated hosts' speed, as a replay's; the "
                "all-reduce computes nothing, so its times do not depend on it\n",
                cfg->gpu, cfg->gpu_efficiency);
    if (st == SS_OK) bench_sizes_print(&o, rows, out);
    if (st == SS_OK && rq->was_set && rq->was_set(cfg, "out")) {
        char csv[RUN_CONFIG_TEXT + 32];
        snprintf(csv, sizeof csv, "%s/bench_network.csv", cfg->out_dir);
        if ((st = ss_mkdir_p(cfg->out_dir)) == SS_OK &&
            (st = bench_sizes_write_csv(&o, rows, csv)) == SS_OK)
            fprintf(out, "# wrote %s\n", csv);
    }
    free(rows);
    return st;
}
