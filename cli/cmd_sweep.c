/* syncsim sweep FILE.ini: the points of a grid (analysis/sweep.h), each an emulation (or a replay)
 * in its own process, --jobs at once; --resume skips the complete ones; --shard I/K and mpirun
 * spread them over processes and machines; the results are gathered into OUT/sweep.csv. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "analysis/ranks.h"
#include "analysis/runs.h"
#include "analysis/sweep.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/outputs.h"
#include "common/number.h"
#include "common/status.h"
#include "common/engine.h"
#include "common/isolate.h"

#include <cblas.h>
#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the option table, as the sweep file needs it ---- */

static int check_point(unsigned command, int argc, char **argv) {
    run_config *cfg = ss_malloc(sizeof *cfg);
    const int rc = options_parse(command, argc, argv, cfg);
    free(cfg);
    return rc;
}

static const sweep_options cli_sweep_options = {
    .train = CMD_TRAIN,
    .replay = CMD_REPLAY,
    .lookup = options_lookup,
    .closest = options_closest,
    .check_value = options_check_value,
    .policy_bit = options_policy_bit,
    .check_point = check_point,
};

const sweep_options *cmd_sweep_options(void) {
    return &cli_sweep_options;
}

/* ---- running ---- */

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* Removes what an earlier, unfinished attempt left in dir (temporary files included). */
static int clear_dir(const char *dir) {
    struct stat sb;
    if (stat(dir, &sb) != 0) return SS_OK;
    if (nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        return ss_error_set(SS_EIO, "sweep: cannot clear %s: %s", dir, strerror(errno));
    return SS_OK;
}

typedef struct sweep_counts {
    int ran, skipped, invalid, failed;
} sweep_counts;

/* This process's share of the points, in the job pool: job k is point first + k stride. */
typedef struct sweep_jobs {
    const sweep_plan *p;
    const run_config *cfg;
    int first, stride, mine, done;
    const char *who;
    sweep_counts *cnt;
    double t0_s;
    double *start_s; /* when each job started (outputs_wall_s) */
} sweep_jobs;

static int job_point(const sweep_jobs *s, int k) {
    return s->first + k * s->stride;
}

/* Before a point starts: invalid ones and (--resume) complete ones are passed over; what an
 * earlier attempt left in its directory is removed. */
static int job_prepare(void *ctx, int k) {
    sweep_jobs *s = ctx;
    const int i = job_point(s, k);
    const sweep_point *pt = &s->p->points[i];
    char dir[1200];
    sweep_point_dir(s->p, i, dir, sizeof dir);
    if (!pt->valid) {
        s->cnt->invalid++;
        printf("%s[%d/%d] %s: invalid, not run: %s\n", s->who, ++s->done, s->mine, pt->name,
               pt->error);
        return SIM_POOL_SKIP;
    }
    if (s->cfg->resume && run_record_complete(dir)) {
        s->cnt->skipped++;
        printf("%s[%d/%d] %s: complete, skipped (--resume)\n", s->who, ++s->done, s->mine,
               pt->name);
        return SIM_POOL_SKIP;
    }
    s->start_s[k] = outputs_wall_s();
    return clear_dir(dir);
}

static void job_log_path(void *ctx, int k, char *buf, size_t n) {
    const sweep_jobs *s = ctx;
    char dir[1200];
    sweep_point_dir(s->p, job_point(s, k), dir, sizeof dir);
    snprintf(buf, n, "%s/log.txt", dir);
}

/* The child of one point: `syncsim COMMAND` with the point's options. */
static int job_run(void *ctx, int k) {
    const sweep_jobs *s = ctx;
    const sweep_point *pt = &s->p->points[job_point(s, k)];
    /* One BLAS thread per point: results do not depend on --jobs, and points share the cores. */
    openblas_set_num_threads(1);
    run_config cfg;
    int rc = options_parse(s->p->command, pt->argc, pt->argv, &cfg);
    if (rc == SS_OK) rc = s->p->command == CMD_REPLAY ? cmd_replay(&cfg) : cmd_train(&cfg);
    if (rc != SS_OK && rc != SS_EDIVERGED) fprintf(stderr, "syncsim: %s\n", ss_error_message());
    fflush(NULL);
    return ss_status_exit_code(rc);
}

static void job_done(void *ctx, int k, const isolate_job_end *end) {
    sweep_jobs *s = ctx;
    const int i = job_point(s, k);
    char dir[1200];
    sweep_point_dir(s->p, i, dir, sizeof dir);
    const int complete = run_record_complete(dir), code = end->exit_code;
    s->cnt->ran++;
    if (!complete) s->cnt->failed++;
    const double now = outputs_wall_s();
    printf("%s[%d/%d] %s: %s (run %.1f s; %.1f s elapsed)\n", s->who, ++s->done, s->mine,
           s->p->points[i].name,
           complete ? (code == 3 ? "diverged" : "ok")
                    : (code == 130 ? "interrupted" : "FAILED, see log.txt"),
           now - s->start_s[k], now - s->t0_s);
    fflush(stdout);
}

/* Runs the points i = first (mod stride), jobs at once; *interrupted: a signal stopped them. */
static int run_points(const sweep_plan *p, const run_config *cfg, int first, int stride,
                      const char *who, sweep_counts *cnt, int *interrupted) {
    sweep_jobs s = {p, cfg, first, stride, 0, 0, who, cnt, outputs_wall_s(), NULL};
    for (int i = first; i < p->n_points; i += stride)
        s.mine++;
    s.start_s = ss_calloc((size_t)(s.mine ? s.mine : 1), sizeof *s.start_s);
    engine_share_cores(cfg->jobs < s.mine ? cfg->jobs : s.mine); /* --threads auto: a share */
    const isolate_pool pool = {s.mine, cfg->jobs, &s, job_prepare, job_log_path, job_run, job_done};
    isolate_pool_report rep;
    const int rc = isolate_pool_run(&pool, NULL, &rep);
    free(s.start_s);
    fflush(stdout);
    *interrupted = rep.interrupted;
    return rc;
}

/* "I/K" -> first, count. */
static int parse_shard(const char *text, int *index, int *count) {
    char i_text[32];
    const char *slash = strchr(text, '/');
    long i, k;
    if (!slash || (size_t)(slash - text) >= sizeof i_text) goto bad;
    memcpy(i_text, text, (size_t)(slash - text));
    i_text[slash - text] = '\0';
    if (number_parse_long(i_text, 0, 100000, &i) || number_parse_long(slash + 1, 1, 100000, &k) ||
        i >= k)
        goto bad;
    *index = (int)i;
    *count = (int)k;
    return SS_OK;
bad:
    return ss_error_set(SS_EUSAGE,
                        "--shard: '%s' is not I/K with 0 <= I < K (e.g. --shard "
                        "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT)",
                        text);
}

static void print_help(void) {
    options_print_help(CMD_SWEEP, "syncsim sweep FILE.ini [options]", stdout);
    printf("\nThe sweep file (INI): [sweep] name, out, command (train|replay); [grid] "
           "option = v1,v2,... (an axis;\nseparate with ';' values that hold commas); "
           "[fixed] option = value. Every option is one of\n`syncsim train` (or "
           "replay). Options limited to some policies apply only to the points of\nthose "
           "policies. Example: analysis/examples/selsync-delta.ini. Under mpirun, rank r "
           "runs the\npoints i = r mod size; rank 0 writes OUT/sweep.csv.\n");
}

static void print_banner(const sweep_plan *p, int jobs, int size, int shard, int shards) {
    int invalid = 0;
    for (int i = 0; i < p->n_points; i++)
        invalid += !p->points[i].valid;
    printf("syncsim sweep %s: %d points (%d invalid", p->name, p->n_points, invalid);
    if (p->merged) printf("; %d grid combinations merged: their policy ignores an axis", p->merged);
    printf("), %d at once", jobs);
    if (size > 1) printf(" on each of %d MPI ranks", size);
    if (shards > 1) printf(", shard %d of %d", shard, shards);
    printf("; outputs in %s/points/\n", p->out_dir);
}

static int sweep_run(int argc, char **argv, int rank, int size) {
    const char *file = NULL;
    char **opts = ss_calloc((size_t)argc + 1, sizeof(char *));
    int n_opts = 0;
    const char *extra = NULL;
    for (int a = 0; a < argc; a++) {
        if (strncmp(argv[a], "--", 2) != 0) {
            if (file && !extra) extra = argv[a];
            if (!file) file = argv[a];
            continue;
        }
        opts[n_opts++] = argv[a];
        if (options_takes_value(CMD_SWEEP, argv[a]) && a + 1 < argc) opts[n_opts++] = argv[++a];
    }
    run_config cfg;
    int rc = options_parse(CMD_SWEEP, n_opts, opts, &cfg);
    free(opts);
    if (rc == SS_OK && extra)
        rc = ss_error_set(SS_EUSAGE,
                          "sweep takes one sweep file ('%s' and '%s' given): syncsim sweep "
                          "FILE.ini [--jobs J] [--resume] [--shard I/K] [--out DIR]",
                          file, extra);
    if (rc != SS_OK) return rc;
    if (cfg.help) {
        if (rank == 0) print_help();
        return SS_OK;
    }
    if (!file)
        return ss_error_set(SS_EUSAGE, "sweep needs a sweep file: syncsim sweep FILE.ini "
                                       "[--jobs J] [--resume] [--shard I/K] [--out DIR]");
    int shard = 0, shards = 1;
    if (cfg.shard[0] && (rc = parse_shard(cfg.shard, &shard, &shards)) != SS_OK) return rc;
    if (shards > 1 && size > 1)
        return ss_error_set(SS_EUSAGE, "--shard and mpirun both split the points: use one");
    sweep_plan *p;
    const char *out_opt = options_was_set(&cfg, "out") ? cfg.out_dir : NULL;
    if ((rc = sweep_plan_load(file, out_opt, cmd_sweep_options(), &p)) != SS_OK) return rc;
    int first = size > 1 ? rank : shard, stride = size > 1 ? size : shards;
    char who[48] = "";
    if (size > 1) snprintf(who, sizeof who, "rank %d: ", rank);
    if (shards > 1) snprintf(who, sizeof who, "shard %d/%d: ", shard, shards);
    if (rank == 0) print_banner(p, cfg.jobs, size, shard, shards);
    fflush(stdout);
    char points_dir[RUN_CONFIG_TEXT + 16];
    snprintf(points_dir, sizeof points_dir, "%s/points", p->out_dir);
    if ((rc = ss_mkdir_p(points_dir)) != SS_OK) {
        sweep_plan_free(p);
        return rc;
    }
    outputs_install_interrupt_handler();
    sweep_counts cnt = {0};
    const double t0 = outputs_wall_s();
    int stopped = 0;
    rc = run_points(p, &cfg, first, stride, who, &cnt, &stopped);
    /* Every rank reaches the barrier, even after a failure, so that rank 0 can gather. */
    const int interrupted = ranks_sum(stopped || outputs_interrupted() ? 1 : 0);
    const int failed_ranks = ranks_sum(rc != SS_OK);
    ranks_barrier();
    int bad = 0, pending = 0;
    if (rank == 0) {
        int grc = sweep_gather(p, &bad, &pending);
        if (rc == SS_OK) rc = grc;
        printf("sweep %s: %d run, %d skipped as complete, %d invalid, %d failed or interrupted "
               "here; %s/sweep.csv (wall %.0f s)\n",
               p->name, cnt.ran, cnt.skipped, cnt.invalid, cnt.failed, p->out_dir,
               outputs_wall_s() - t0);
        if (pending)
            printf("%d point(s) not run yet (other shards, or interrupted): when they are done, "
                   "`syncsim sweep %s --resume` gathers everything\n",
                   pending, file);
    }
    char out_dir[RUN_CONFIG_TEXT];
    snprintf(out_dir, sizeof out_dir, "%s", p->out_dir);
    sweep_plan_free(p);
    if (rc != SS_OK) return rc;
    if (failed_ranks) return ss_error_set(SS_EIO, "sweep: %d rank(s) failed", failed_ranks);
    if (interrupted) return SS_EINTERRUPT;
    if (rank == 0 && bad)
        return ss_error_set(SS_EIO,
                            "sweep: %d point(s) invalid, failed or interrupted (see the status "
                            "and message columns of %s/sweep.csv)",
                            bad, out_dir);
    return SS_OK;
}

int cmd_sweep_main(int argc, char **argv) {
    int rank = 0, size = 1;
    int rc = ranks_init(&rank, &size);
    if (rc == SS_OK) rc = sweep_run(argc, argv, rank, size);
    if (rc != SS_OK && rc != SS_EINTERRUPT)
        fprintf(stderr, "syncsim: %s%s\n", size > 1 ? "" : "", ss_error_message());
    fflush(NULL);
    ranks_finalize();
    return ss_status_exit_code(rc);
}
