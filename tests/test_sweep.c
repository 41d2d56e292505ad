/* syncsim sweep: the sweep file (errors with file, line and the closest key), the grid's
 * expansion and its policy rule, contradictory points, and end to end: a sweep killed midway and
 * resumed, and the same sweep over 2 MPI ranks, gather the same CSV as an uninterrupted serial
 * run. Points are tiny (synthetic data, logreg, 0.2 epochs, 2 workers). */
#include "analysis/ranks.h"
#include "analysis/runs.h"
#include "analysis/sweep.h"
#include "cli/commands.h"
#include "common/afile.h"
#include "common/csv.h"
#include "common/status.h"
#include "common/isolate.h"
#include "ss_test.h"

#include <signal.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char root[256];

static int suite_init(void) {
    snprintf(root, sizeof root, "/tmp/ss_test_sweep.%d", (int)getpid());
    return ss_mkdir_p(root) == SS_OK ? 0 : 1;
}

static int suite_clean(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : 1;
}

static void write_sweep(const char *name, const char *text, char *path, size_t n) {
    snprintf(path, n, "%s/%s", root, name);
    FILE *fp = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    fputs(text, fp);
    fclose(fp);
}

/* The message of a sweep file that must not load. */
static const char *load_error(const char *text) {
    char path[300];
    write_sweep("bad.ini", text, path, sizeof path);
    sweep_plan *p = NULL;
    int rc = sweep_plan_load(path, "out", cmd_sweep_options(), &p);
    CU_ASSERT_EQUAL(rc, SS_EUSAGE);
    sweep_plan_free(p);
    return ss_error_message();
}

static void check_contains(const char *text, const char *part) {
    int ok = strstr(text, part) != NULL;
    if (!ok) fprintf(stderr, "\n  '%s' does not contain '%s'\n", text, part);
    CU_ASSERT(ok);
}

static void test_sweep_file_errors(void) {
    /* sweep_plan_load: unknown key with file, line and closest key; bad values; sections */
    const char *m = load_error("[sweep]\nname = x\n\n[grid]\npolicy = bsp,selsync\ndetla = 0.1\n");
    check_contains(m, "bad.ini:6:");
    check_contains(m, "unknown key 'detla'");
    check_contains(m, "did you mean 'delta'?");
    m = load_error("[grid]\ndelta = 0.1,abc\n");
    check_contains(m, "bad.ini:2:");
    check_contains(m, "invalid value 'abc'");
    /* values kept before a refused one are freed with the plan (LeakSanitizer in build-asan) */
    m = load_error("[grid]\nseed = 1\nlr = 0.1,0.2,0.3,x\n");
    check_contains(m, "bad.ini:3:");
    check_contains(m, "invalid value 'x'");
    m = load_error("[fixed]\nepochs = 0.2\n[grids]\nseed = 1\n");
    check_contains(m, "bad.ini:4:");
    check_contains(m, "sections are [sweep], [grid] and [fixed]");
    m = load_error("[sweep]\nnmae = x\n");
    check_contains(m, "bad.ini:2:");
    check_contains(m, "did you mean 'name'?");
    m = load_error("[grid]\nseed = 1,2\n[fixed]\nseed = 3\n");
    check_contains(m, "bad.ini:4:");
    check_contains(m, "given twice");
    m = load_error("[fixed]\nout = x\n");
    check_contains(m, "[sweep] out or --out");
}

static void test_sweep_expand_policy_rule(void) {
    /* sweep_plan_load: delta applies only to selsync points; bsp points omit it and coincide */
    char path[300];
    write_sweep("rule.ini",
                "[sweep]\nout = o\n[grid]\npolicy = bsp,selsync\ndelta = 0.05,0.3\nseed = 1,2\n"
                "[fixed]\nworkers = 2\nmodel = mlp:16,8\n",
                path, sizeof path);
    sweep_plan *p;
    CU_ASSERT_EQUAL_FATAL(sweep_plan_load(path, NULL, cmd_sweep_options(), &p), SS_OK);
    CU_ASSERT_EQUAL(p->n_points, 6);
    CU_ASSERT_EQUAL(p->merged, 2);
    CU_ASSERT_STRING_EQUAL(p->points[0].name, "policy=bsp,seed=1");
    CU_ASSERT_STRING_EQUAL(p->points[1].name, "policy=bsp,seed=2");
    CU_ASSERT_STRING_EQUAL(p->points[2].name, "policy=selsync,delta=0.05,seed=1");
    CU_ASSERT_STRING_EQUAL(p->points[5].name, "policy=selsync,delta=0.3,seed=2");
    for (int i = 0; i < p->n_points; i++) {
        CU_ASSERT(p->points[i].valid);
        int has_delta = 0;
        for (int k = 0; k < p->points[i].argc; k++)
            has_delta |= !strncmp(p->points[i].argv[k], "--delta=", 8);
        CU_ASSERT_EQUAL(has_delta, i >= 2);
    }
    char dir[600];
    sweep_point_dir(p, 2, dir, sizeof dir);
    CU_ASSERT_STRING_EQUAL(dir, "o/points/policy=selsync,delta=0.05,seed=1");
    /* values holding commas are separated by ';' */
    sweep_plan_free(p);
    write_sweep("semi.ini", "[grid]\nmodel = logreg;mlp:16,8\n[fixed]\nworkers = 2\n", path,
                sizeof path);
    CU_ASSERT_EQUAL_FATAL(sweep_plan_load(path, "o", cmd_sweep_options(), &p), SS_OK);
    CU_ASSERT_EQUAL(p->n_points, 2);
    CU_ASSERT_STRING_EQUAL(p->points[1].name, "model=mlp:16_8");
    sweep_plan_free(p);
}

static void test_sweep_contradictory_point(void) {
    /* sweep_plan_load: a point whose options contradict is invalid, with the reason; the others
     * are valid */
    char path[300];
    write_sweep("contra.ini",
                "[grid]\ninject-alpha = 0,0.5\nlocal-steps = 4\n[fixed]\npolicy = selsync\n"
                "workers = 2\n",
                path, sizeof path);
    sweep_plan *p;
    CU_ASSERT_EQUAL_FATAL(sweep_plan_load(path, "o", cmd_sweep_options(), &p), SS_OK);
    /* local-steps is fedavg's: it names no point of selsync */
    CU_ASSERT_EQUAL(p->n_points, 2);
    CU_ASSERT(p->points[0].valid);
    CU_ASSERT(!p->points[1].valid);
    check_contains(p->points[1].error, "inject-beta");
    sweep_plan_free(p);
}

/* Loads text[0..size) from a file and from memory under the same name: the same status and
 * message, or the same points with the same options. */
static void check_mem_equals_file(const char *text, size_t size) {
    char path[300];
    snprintf(path, sizeof path, "%s/mem.ini", root);
    FILE *fp = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    CU_ASSERT_EQUAL_FATAL(fwrite(text, 1, size, fp), size);
    fclose(fp);
    sweep_plan *a = NULL, *b = NULL;
    const int ra = sweep_plan_load(path, "o", cmd_sweep_options(), &a);
    char message[1024];
    snprintf(message, sizeof message, "%s", ss_error_message());
    const int rb = sweep_plan_load_mem(path, text, size, "o", cmd_sweep_options(), &b);
    CU_ASSERT_EQUAL(ra, rb);
    if (ra != SS_OK) CU_ASSERT_STRING_EQUAL(message, ss_error_message());
    if (ra == SS_OK && rb == SS_OK) {
        CU_ASSERT_STRING_EQUAL(a->name, b->name);
        CU_ASSERT_EQUAL(a->merged, b->merged);
        CU_ASSERT_EQUAL_FATAL(a->n_points, b->n_points);
        for (int i = 0; i < a->n_points; i++) {
            CU_ASSERT_STRING_EQUAL(a->points[i].name, b->points[i].name);
            CU_ASSERT_EQUAL_FATAL(a->points[i].argc, b->points[i].argc);
            for (int k = 0; k < a->points[i].argc; k++)
                CU_ASSERT_STRING_EQUAL(a->points[i].argv[k], b->points[i].argv[k]);
        }
    }
    sweep_plan_free(a);
    sweep_plan_free(b);
}

static void test_sweep_mem_equals_file(void) {
    /* sweep_plan_load_mem reads bytes as sweep_plan_load reads the file: NUL bytes, lines longer
     * than inih's 200-byte buffer, CR LF, no final newline, an empty file */
    static const char nul[] = "[sweep]\nout = o\n[grid]\nseed = 1,\0002\nlr = 0.1\n";
    static const char good[] = "[sweep]\nname = n\n[grid]\npolicy = bsp,selsync\ndelta = 0.1,0.2"
                               "\n[fixed]\nworkers = 2\n";
    char longline[700];
    snprintf(longline, sizeof longline, "[grid]\nseed = 1\n; %0500d\nlr = 0.1,0.2\n", 0);
    const char *texts[] = {good,    "[grid]\r\nseed = 1,2\r\n", "[grid]\nseed = 1,2",
                           "",      "[grid]\nseed 1\n",         "[grids]\nseed = 1\n",
                           longline};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        check_mem_equals_file(texts[i], strlen(texts[i]));
    check_mem_equals_file(nul, sizeof nul - 1);
    check_mem_equals_file(good, 20); /* cut inside a line */
}

static void test_sweep_largest_grid(void) {
    /* 2 policies x 32 deltas x 64 seeds = 4096 combinations, the most a grid may have (each line
     * within inih's 200 bytes): the bsp ones omit delta, so each seed's 32 coincide (one point,
     * 31 merged); selsync keeps all */
    char text[1024], deltas[256] = "", seeds[256] = "";
    for (int d = 1; d <= 32; d++)
        snprintf(deltas + strlen(deltas), sizeof deltas - strlen(deltas), "%s0.%02d",
                 d > 1 ? "," : "", d);
    for (int s = 1; s <= 64; s++)
        snprintf(seeds + strlen(seeds), sizeof seeds - strlen(seeds), "%s%d", s > 1 ? "," : "", s);
    snprintf(text, sizeof text, "[grid]\npolicy = bsp,selsync\ndelta = %s\nseed = %s\n", deltas,
             seeds);
    sweep_plan *p;
    CU_ASSERT_EQUAL_FATAL(
        sweep_plan_load_mem("big.ini", text, strlen(text), "o", cmd_sweep_options(), &p), SS_OK);
    CU_ASSERT_EQUAL(p->n_points, 64 + 32 * 64);
    CU_ASSERT_EQUAL(p->merged, 31 * 64);
    CU_ASSERT_STRING_EQUAL(p->name, "big.ini");
    CU_ASSERT_STRING_EQUAL(p->points[63].name, "policy=bsp,seed=64");
    CU_ASSERT_STRING_EQUAL(p->points[64].name, "policy=selsync,delta=0.01,seed=1");
    CU_ASSERT_STRING_EQUAL(p->points[64 + 32 * 64 - 1].name, "policy=selsync,delta=0.32,seed=64");
    for (int i = 0; i < p->n_points; i++)
        CU_ASSERT(p->points[i].valid);
    sweep_plan_free(p);
    /* one more axis is too many combinations */
    snprintf(text, sizeof text, "[grid]\npolicy = bsp,selsync\ndelta = %s\nseed = %s\nlr = 1,2\n",
             deltas, seeds);
    CU_ASSERT_EQUAL(
        sweep_plan_load_mem("big.ini", text, strlen(text), "o", cmd_sweep_options(), &p),
        SS_EUSAGE);
    check_contains(ss_error_message(), "big.ini: the grid has more than 4096 points");
}

static void test_sweep_same_directory_name(void) {
    /* two platforms with the same base name would share a point directory: refused with a
     * message, not one of them dropped */
    const char *m = load_error("[grid]\nplatform = x/p.xml,y/p.xml\nseed = 1,2\n[fixed]\n"
                               "policy = bsp\nworkers = 2\n");
    check_contains(m, "bad.ini: two different points get the directory name 'platform=p,seed=1'");
}

/* ---- end to end ---- */

static const char *tiny_sweep = "[sweep]\nname = tiny\n[grid]\npolicy = bsp,selsync\n"
                                "delta = 0.05,0.3\nseed = 1,2\nlr = 0.05,100\n[fixed]\n"
                                "workers = 2\ndataset = synthetic\nmodel = mlp:32\nepochs = 0.2\n"
                                "momentum = 0.99\newma-window = 3\ndevice = cpu\n";

/* Runs `syncsim sweep` in a child process (its points are its children); returns its pid. */
static pid_t start_sweep(const char *file, const char *out, int jobs, int resume) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        char jobs_arg[32], out_arg[400];
        snprintf(jobs_arg, sizeof jobs_arg, "--jobs=%d", jobs);
        snprintf(out_arg, sizeof out_arg, "--out=%s", out);
        char *argv[] = {(char *)file, jobs_arg, out_arg, resume ? "--resume" : NULL, NULL};
        char log[420]; /* the progress lines, beside OUT */
        snprintf(log, sizeof log, "%s.stdout", out);
        if (!freopen(log, "w", stdout)) _exit(99);
        _exit(cmd_sweep_main(resume ? 4 : 3, argv));
    }
    return pid;
}

static int wait_exit(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        ;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static char *read_text(const char *path) {
    FILE *fp = fopen(path, "r");
    if (!fp) return NULL;
    char *text = NULL;
    size_t cap = 0;
    if (getdelim(&text, &cap, '\0', fp) < 0) {
        free(text);
        text = NULL;
    }
    fclose(fp);
    return text;
}

/* The uninterrupted serial run's sweep.csv, the reference of the resumed and MPI sweeps: made
 * by the first test that needs it, so that every test also runs alone (SS_TEST) or first.
 * Sets *rc to the sweep's exit code when this call ran it. */
static const char *serial_csv(int *rc) {
    static char path[500];
    char file[300], out[400];
    write_sweep("tiny.ini", tiny_sweep, file, sizeof file);
    snprintf(out, sizeof out, "%s/serial", root);
    snprintf(path, sizeof path, "%s/sweep.csv", out);
    if (access(path, R_OK) != 0) {
        int code = wait_exit(start_sweep(file, out, 2, 0));
        if (rc) *rc = code;
    }
    return path;
}

static void test_sweep_serial(void) {
    /* cmd_sweep_main: every point runs; the diverged ones (lr 100) are results, not failures */
    int rc = 0;
    char *csv = read_text(serial_csv(&rc));
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(csv);
    int rows = 0, ok = 0, diverged = 0;
    char *save = NULL;
    for (char *line = strtok_r(csv, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, "index,", 6)) continue; /* header */
        rows++;
        ok += strstr(line, ",ok,") != NULL;
        diverged += strstr(line, ",diverged,") != NULL;
    }
    CU_ASSERT_EQUAL(rows, 12); /* bsp: 2 seeds x 2 lr; selsync: 2 deltas x 2 seeds x 2 lr */
    CU_ASSERT_EQUAL(ok + diverged, 12);
    CU_ASSERT_EQUAL(diverged, 6); /* lr 100 with momentum 0.99 */
    free(csv);
}

static void test_sweep_tta_and_progress(void) {
    /* sweep.csv: tta_s and speedup_vs_bsp as report measures them (tta.h): every finished point
     * has its BSP point (delta does not apply to bsp), bsp's speedup is 1; the diverged ones are
     * "unfinished". The progress lines give each point's own wall time, not the time since the
     * sweep began: with 2 at once their sum is at most about twice the elapsed time. */
    csv_reader r;
    int got;
    CU_ASSERT_EQUAL_FATAL(csv_open(&r, serial_csv(NULL)), SS_OK);
    CU_ASSERT_FATAL(csv_next(&r, &got) == SS_OK && got);
    const int cp = csv_find(&r, "policy"), cs = csv_find(&r, "status"),
              cx = csv_find(&r, "speedup_vs_bsp"), ct = csv_find(&r, "tta"),
              cn = csv_find(&r, "target_tta_s");
    CU_ASSERT_FATAL(cp >= 0 && cs >= 0 && cx >= 0 && ct >= 0 && cn >= 0);
    int ok = 0;
    while (csv_next(&r, &got) == SS_OK && got) {
        if (strcmp(r.field[cs], "ok") != 0) {
            CU_ASSERT_STRING_EQUAL(r.field[ct], "unfinished");
            continue;
        }
        ok++;
        CU_ASSERT(!strcmp(r.field[ct], "reached") || !strcmp(r.field[ct], "never"));
        if (!strcmp(r.field[cp], "bsp")) SS_CHECK_CLOSE(strtod(r.field[cx], NULL), 1, 1e-12, 0);
    }
    csv_close(&r);
    CU_ASSERT_EQUAL(ok, 6);
    char log[500];
    snprintf(log, sizeof log, "%s/serial.stdout", root);
    char *text = read_text(log);
    if (!text) SS_SKIP("the serial sweep ran in an earlier process: no progress lines here");
    double sum = 0, last = 0;
    int lines = 0;
    for (char *p = strstr(text, "(run "); p; p = strstr(p + 1, "(run ")) {
        double run, elapsed;
        CU_ASSERT_FATAL(sscanf(p, "(run %lf s; %lf s elapsed)", &run, &elapsed) == 2);
        CU_ASSERT(run <= elapsed + 0.05);
        sum += run, last = elapsed, lines++;
    }
    CU_ASSERT_EQUAL(lines, 12);
    CU_ASSERT(sum <= 2 * last + 12 * 0.1);
    free(text);
}

static int count_complete(const char *out) {
    char **dirs = NULL;
    int n = 0, complete = 0;
    if (run_dirs_find(out, &dirs, &n) != SS_OK) return 0;
    for (int i = 0; i < n; i++)
        complete += run_record_complete(dirs[i]);
    run_dirs_free(dirs, n);
    return complete;
}

/* Marks a kept summary.json with a modification time in the past (2001-09-09): a rewrite would
 * give it the current time, with no need to wait for the clock to move. */
static const struct timespec kept_mtime = {1000000000, 0};

static void mark_kept(const char *path) {
    struct timespec times[2] = {kept_mtime, kept_mtime};
    CU_ASSERT_EQUAL(utimensat(AT_FDCWD, path, times, 0), 0);
}

static void test_sweep_killed_then_resumed(void) {
    /* cmd_sweep_main --resume: after a SIGKILL midway, the complete points are kept (not rerun),
     * the others rerun, and the gathered CSV equals the uninterrupted run's. Where the kill
     * lands is up to the scheduler, so the test asserts nothing about it: it waits for a first
     * complete point, kills, and (should every point have finished) removes the last summary,
     * so that there is always a kept point and a point to rerun. */
    char file[300], out[400];
    const char *reference = serial_csv(NULL);
    snprintf(file, sizeof file, "%s/tiny.ini", root);
    snprintf(out, sizeof out, "%s/killed", root);
    pid_t pid = start_sweep(file, out, 1, 0);
    const struct timespec tick = {0, 5000000};
    for (int waited = 0; waited < 24000 && count_complete(out) < 1; waited++)
        nanosleep(&tick, NULL);
    kill(pid, SIGKILL);
    wait_exit(pid);
    char **dirs = NULL;
    int n = 0;
    CU_ASSERT_EQUAL_FATAL(run_dirs_find(out, &dirs, &n), SS_OK);
    if (count_complete(out) == 12) {
        char last[1200];
        snprintf(last, sizeof last, "%s/summary.json", dirs[n - 1]);
        CU_ASSERT_EQUAL(unlink(last), 0);
    }
    int before = count_complete(out);
    CU_ASSERT(before >= 1 && before < 12);
    /* the points complete before the kill: their summary.json must survive the resume */
    struct stat kept[16];
    int was_complete[16] = {0};
    for (int i = 0; i < n && i < 16; i++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/summary.json", dirs[i]);
        if (!run_record_complete(dirs[i])) continue;
        mark_kept(path);
        was_complete[i] = stat(path, &kept[i]) == 0;
    }
    CU_ASSERT_EQUAL(wait_exit(start_sweep(file, out, 2, 1)), 0);
    CU_ASSERT_EQUAL(count_complete(out), 12);
    for (int i = 0; i < n && i < 16; i++) {
        if (!was_complete[i]) continue;
        char path[1200];
        snprintf(path, sizeof path, "%s/summary.json", dirs[i]);
        struct stat now;
        CU_ASSERT_EQUAL_FATAL(stat(path, &now), 0);
        CU_ASSERT(now.st_ino == kept[i].st_ino && now.st_mtime == kept_mtime.tv_sec);
    }
    run_dirs_free(dirs, n);
    char csv_path[500];
    snprintf(csv_path, sizeof csv_path, "%s/sweep.csv", out);
    char *a = read_text(reference), *b = read_text(csv_path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_STRING_EQUAL(a, b);
    free(a);
    free(b);
}

static void test_sweep_mpi(void) {
    /* mpirun -np 2 syncsim sweep: the ranks share the points; rank 0 gathers the same CSV */
    if (!ranks_compiled_with_mpi()) SS_SKIP("built without MPI: MPI sweep not checked");
    if (system("mpirun --version > /dev/null 2>&1") != 0)
        SS_SKIP("no mpirun on the PATH: MPI sweep not checked");
    const char *reference = serial_csv(NULL);
    char cmd[1200], out[400], csv_path[500];
    snprintf(out, sizeof out, "%s/mpi", root);
    snprintf(cmd, sizeof cmd,
             "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
             /* the sanitizer build: OpenMPI's plugins keep memory until exit, unloaded by then
              * (LeakSanitizer cannot name them to suppress them) */
             "ASAN_OPTIONS=detect_leaks=0 "
             /* loopback only, whatever testbed bridge exists beside it */
             "OMPI_MCA_mpi_warn_on_fork=0 OMPI_MCA_btl_tcp_if_include=lo "
             "OMPI_MCA_oob_tcp_if_include=lo mpirun --oversubscribe -np 2 %s/syncsim sweep "
             "%s/tiny.ini --jobs 1 --out %s > %s/mpi.log 2>&1",
             SS_BINARY_DIR, root, out, root);
    int rc = system(cmd);
    if (rc != 0) {
        char log[400];
        snprintf(log, sizeof log, "%s/mpi.log", root);
        char *text = read_text(log);
        fprintf(stderr, "\n  %s\n  exit %d:\n%s\n", cmd, rc, text ? text : "(no log)");
        free(text);
    }
    CU_ASSERT_EQUAL(rc, 0);
    snprintf(csv_path, sizeof csv_path, "%s/sweep.csv", out);
    char *a = read_text(reference), *b = read_text(csv_path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_STRING_EQUAL(a, b);
    free(a);
    free(b);
}

static void test_sweep_invalid_point_runs_the_rest(void) {
    /* cmd_sweep_main: an invalid point is reported in sweep.csv, the others run, exit code 1 */
    char file[300], out[400];
    write_sweep("contra-run.ini",
                "[grid]\ninject-alpha = 0,0.5\n[fixed]\npolicy = selsync\nworkers = 2\n"
                "dataset = synthetic\nmodel = logreg\nepochs = 0.2\ndevice = cpu\n",
                file, sizeof file);
    snprintf(out, sizeof out, "%s/contra", root);
    CU_ASSERT_EQUAL(wait_exit(start_sweep(file, out, 2, 0)), 1);
    char csv_path[500];
    snprintf(csv_path, sizeof csv_path, "%s/sweep.csv", out);
    char *csv = read_text(csv_path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(csv);
    check_contains(csv, "0,inject-alpha=0,0,ok,");
    check_contains(csv, "1,inject-alpha=0.5,0.5,invalid,");
    check_contains(csv, "needs both --inject-alpha and --inject-beta");
    free(csv);
}

/* ---- the job pool (common/isolate.h) ---- */

typedef struct pool_ctx {
    char dir[300];
    int order[8], n_done; /* jobs in the order they ended */
} pool_ctx;

static int pool_prepare(void *ctx, int j) {
    (void)ctx;
    return j == 1 ? SIM_POOL_SKIP : SS_OK;
}

static void pool_log(void *ctx, int j, char *buf, size_t n) {
    snprintf(buf, n, "%s/job-%d/log.txt", ((pool_ctx *)ctx)->dir, j);
}

static int pool_job(void *ctx, int j) {
    (void)ctx;
    printf("job %d on stdout\n", j);
    fprintf(stderr, "job %d on stderr\n", j);
    return j == 3 ? 5 : 0;
}

static void pool_done(void *ctx, int j, const isolate_job_end *e) {
    pool_ctx *c = ctx;
    CU_ASSERT(e->started && e->finished);
    c->order[c->n_done++] = j;
}

static void test_pool_runs_logs_skips(void) {
    /* isolate_pool_run: J at once, a log per job, skipped jobs, exit codes */
    pool_ctx c = {.n_done = 0};
    snprintf(c.dir, sizeof c.dir, "%s/pool", root);
    isolate_job_end ends[5];
    isolate_pool_report rep;
    const isolate_pool pool = {5, 2, &c, pool_prepare, pool_log, pool_job, pool_done};
    CU_ASSERT_EQUAL(isolate_pool_run(&pool, ends, &rep), SS_OK);
    CU_ASSERT_EQUAL(rep.started, 4);
    CU_ASSERT_EQUAL(rep.skipped, 1);
    CU_ASSERT_EQUAL(rep.not_started, 0);
    CU_ASSERT_EQUAL(rep.failed, 1);
    CU_ASSERT_EQUAL(rep.interrupted, 0);
    CU_ASSERT_EQUAL(c.n_done, 4);
    CU_ASSERT(!ends[1].started);
    CU_ASSERT_EQUAL(ends[3].exit_code, 5);
    CU_ASSERT_EQUAL(ends[4].exit_code, 0);
    char path[400];
    snprintf(path, sizeof path, "%s/job-4/log.txt", c.dir);
    char *log = read_text(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(log);
    check_contains(log, "job 4 on stdout\njob 4 on stderr\n");
    free(log);
}

/* Job 0 interrupts the pool (SIGTERM to its parent) and waits to be stopped. */
static int pool_interrupting_job(void *ctx, int j) {
    (void)ctx;
    if (j == 0) {
        kill(getppid(), SIGTERM);
        for (int k = 0; k < 100; k++)
            usleep(100 * 1000);
        return 9; /* not stopped within 10 s */
    }
    return 0;
}

static void test_pool_interrupted(void) {
    /* isolate_pool_run: SIGTERM stops the launches, the running child gets SIGTERM */
    pool_ctx c = {.n_done = 0};
    snprintf(c.dir, sizeof c.dir, "%s/pool-int", root);
    isolate_job_end ends[4];
    isolate_pool_report rep;
    const isolate_pool pool = {4, 1, &c, NULL, pool_log, pool_interrupting_job, pool_done};
    CU_ASSERT_EQUAL(isolate_pool_run(&pool, ends, &rep), SS_OK);
    CU_ASSERT_EQUAL(rep.interrupted, 1);
    CU_ASSERT_EQUAL(rep.started, 1);
    CU_ASSERT_EQUAL(rep.not_started, 3);
    CU_ASSERT_EQUAL(ends[0].signal, SIGTERM); /* the test's own SIGTERM disposition: default */
    CU_ASSERT_EQUAL(ends[0].exit_code, 128 + SIGTERM);
    CU_ASSERT(!ends[1].started && !ends[3].started);
}

static CU_TestInfo file_tests[] = {
    {"sweep_plan_load: errors name file, line, closest key", test_sweep_file_errors},
    {"sweep_plan_load: policy-limited axes, merged points", test_sweep_expand_policy_rule},
    {"sweep_plan_load: contradictory point is invalid", test_sweep_contradictory_point},
    {"sweep_plan_load_mem: same plan or message as from the file", test_sweep_mem_equals_file},
    {"sweep_plan_load: 4096 combinations, bsp ones merged", test_sweep_largest_grid},
    {"sweep_plan_load: points sharing a directory name refused", test_sweep_same_directory_name},
    CU_TEST_INFO_NULL};

static CU_TestInfo run_tests[] = {
    {"cmd_sweep_main: serial run, diverged points counted", test_sweep_serial},
    {"sweep.csv TTA as report's; progress lines per point", test_sweep_tta_and_progress},
    {"cmd_sweep_main --resume after SIGKILL: same CSV", test_sweep_killed_then_resumed},
    {"mpirun -np 2 syncsim sweep: same CSV", test_sweep_mpi},
    {"cmd_sweep_main: invalid point reported, rest run", test_sweep_invalid_point_runs_the_rest},
    {"isolate_pool_run: J at once, logs, skipped and failed jobs", test_pool_runs_logs_skips},
    {"isolate_pool_run: SIGTERM stops launches and the running job", test_pool_interrupted},
    CU_TEST_INFO_NULL};

int main(void) {
    CU_SuiteInfo suites[] = {{"sweep file", suite_init, NULL, NULL, NULL, file_tests},
                             {"sweep runs", suite_init, suite_clean, NULL, NULL, run_tests},
                             CU_SUITE_INFO_NULL};
    return ss_test_main(suites);
}
