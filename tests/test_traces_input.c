/* CUnit suite of traces/'s bad input and interruptions: the readers of traces, profiles and real
 * logs refuse special files by their type and bound their lines; the import refuses a log with
 * missing rows; a trace's version past any integer and a profile's batch 0 are refused with what
 * is valid; SIGINT and SIGTERM end a replay as they end a training run (exit 130, status
 * "interrupted", no temporary file left). */
#define _GNU_SOURCE /* fopencookie: an endless stream */
#include "common/status.h"
#include "common/summary.h"
#include "ss_test.h"
#include "traces/profile.h"
#include "traces/trace.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char out_root[256];

/* Runs `syncsim ARGS` under a time limit (a reader that never returns shows as exit 124), its
 * output into *out (caller frees); the exit code. */
static int run_syncsim(const char *args, char **out) {
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "timeout 60 %s/syncsim %s 2>&1", SS_BINARY_DIR, args);
    return ss_test_shell(cmd, out);
}

static void expect_cli(const char *args, int code, const char *frag) {
    char *out = NULL;
    int rc = run_syncsim(args, &out);
    int ok = rc == code && (!frag || strstr(out, frag));
    if (!ok)
        fprintf(stderr, "\n  syncsim %s\n  exit %d (expected %d), output:\n%s\n  expected '%s'\n",
                args, rc, code, out, frag ? frag : "");
    CU_ASSERT(ok);
    free(out);
}

static void expect_message(int rc, int want_rc, const char *needle) {
    CU_ASSERT_EQUAL(rc, want_rc);
    if (rc != want_rc || !strstr(ss_error_message(), needle)) {
        fprintf(stderr, "\n  status %d (expected %d), message '%s' lacks '%s'\n", rc, want_rc,
                ss_error_message(), needle);
        CU_FAIL("message");
    }
}

/* ---- special files ---- */

/* A directory, a device and a FIFO given where a trace, a profile or a log is expected: refused
 * by type, before reading (/dev/zero never ends; a FIFO without a writer blocks the open), with
 * exit 1 as for any malformed file. */
static void test_special_files_refused(void) {
    char fifo[512], args[1024];
    snprintf(fifo, sizeof fifo, "%s/fifo", out_root);
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
    const char *files[] = {"/dev/zero", out_root, fifo};
    const char *types[] = {"is a character device, not a regular file",
                           "is a directory, not a regular file",
                           "is a FIFO (pipe), not a regular file"};
    for (int i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "replay --trace %s --out %s/special", files[i], out_root);
        expect_cli(args, 1, types[i]);
        snprintf(args, sizeof args, "trace --trace %s", files[i]);
        expect_cli(args, 1, "a trace is a steps.trace file");
        snprintf(args, sizeof args, "replay --profile %s --out %s/special", files[i], out_root);
        expect_cli(args, 1, types[i]);
        snprintf(args, sizeof args, "replay --import %s --param-bytes 4e6 --out %s/special",
                 files[i], out_root);
        expect_cli(args, 1, types[i]);
    }
    /* the record-by-record reader (report) and the library calls too */
    trace_stream *s = NULL;
    expect_message(trace_stream_open(out_root, &s), SS_EINPUT, "is a directory");
    trace *t = NULL;
    expect_message(trace_load(out_root, &t), SS_EINPUT, "is a directory");
    model_profile p;
    expect_message(profile_load(out_root, &p), SS_EINPUT, "is a directory");
    unlink(fifo);
}

/* An endless stream without a line end: 'x' for ever. */
static ssize_t endless_read(void *cookie, char *buf, size_t size) {
    (void)cookie;
    memset(buf, 'x', size);
    return (ssize_t)size;
}

/* In a child (bounded in time and memory, so that a reader without a line limit fails instead of
 * taking the machine): reads an endless line as a trace (which = 0), a profile (1) or a log (2);
 * exit 0 when the reader refused it as too long. */
static int endless_child(int which) {
    alarm(30);
#ifndef __SANITIZE_ADDRESS__
    struct rlimit rl = {.rlim_cur = (rlim_t)1 << 30, .rlim_max = (rlim_t)1 << 30};
    setrlimit(RLIMIT_AS, &rl);
#endif
    cookie_io_functions_t io = {.read = endless_read};
    FILE *fp = fopencookie(NULL, "r", io);
    if (!fp) return 2;
    int rc;
    if (which == 0) {
        trace *t = NULL;
        rc = trace_read(fp, "endless.trace", &t);
        trace_free(t);
    } else if (which == 1) {
        model_profile p;
        rc = profile_read(fp, "endless.profile", &p);
    } else {
        policy_config pc;
        policy_config_default(&pc);
        trace *t = NULL;
        rc = trace_import_csv_stream(fp, "endless.csv", &pc, 4e6, &t);
        trace_free(t);
    }
    fclose(fp);
    const char *m = ss_error_message();
    if (rc == SS_EINPUT && (strstr(m, "endless.trace:1: line too long") ||
                            strstr(m, "endless.profile:1: line too long") ||
                            strstr(m, "endless.csv:1: line too long")))
        return 0;
    fprintf(stderr, "\n  endless %d: status %d, '%s'\n", which, rc, m);
    return 1;
}

static void test_endless_line_bounded(void) {
    for (int which = 0; which < 3; which++) {
        fflush(NULL);
        pid_t pid = fork();
        CU_ASSERT_FATAL(pid >= 0);
        if (pid == 0) _exit(endless_child(which));
        int status = 0;
        CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
        CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
}

/* ---- real logs with missing rows ---- */

/* A log of `steps` x `workers` rows, without the row (skip_step, skip_worker); skip_worker -1:
 * without that step for every worker. */
static char *log_text(int steps, int workers, int skip_step, int skip_worker) {
    char *text = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&text, &len);
    fprintf(fp, "step,worker,compute_s,sync_s,decision\n");
    for (int s = 1; s <= steps; s++)
        for (int w = 0; w < workers; w++)
            if (!(s == skip_step && (skip_worker < 0 || w == skip_worker)))
                fprintf(fp, "%d,%d,0.25,0.02,sync\n", s, w);
    fclose(fp);
    return text;
}

static int import_text(const char *text, trace **t) {
    policy_config pc;
    policy_config_default(&pc);
    FILE *fp = fmemopen((void *)text, strlen(text), "r");
    int rc = trace_import_csv_stream(fp, "log.csv", &pc, 4e6, t);
    fclose(fp);
    return rc;
}

/* A missing row used to cut the run silently at the step before it (one row of a 40-step log:
 * 90 % of it discarded); the import refuses it, naming the file, the step and the worker. */
static void test_import_missing_rows(void) {
    trace *t = NULL;
    char *text = log_text(40, 8, 0, 0);
    CU_ASSERT_EQUAL(import_text(text, &t), SS_OK);
    if (t) CU_ASSERT(t->steps_done == 40 && t->pc.steps == 40 && t->workers == 8);
    trace_free(t);
    free(text);
    text = log_text(40, 8, 5, 3);
    expect_message(import_text(text, &t), SS_EINPUT,
                   "log.csv: no row for step 5 of worker 3 (1 of the 320 rows of steps 1..40 x "
                   "workers 0..7 missing)");
    CU_ASSERT_PTR_NULL(t);
    free(text);
    text = log_text(40, 8, 3, -1);
    expect_message(import_text(text, &t), SS_EINPUT,
                   "log.csv: no row for step 3 of worker 0 (8 of the 320 rows");
    free(text);
    /* a worker that logged nothing but is below the highest worker logged */
    const char *gap = "step,worker,compute_s,sync_s,decision\n1,0,1,0,1\n1,2,1,0,1\n";
    expect_message(import_text(gap, &t), SS_EINPUT, "log.csv: no row for step 1 of worker 1");
}

/* ---- trace version and profile batch ---- */

static void expect_trace_error(const char *text, const char *needle) {
    FILE *fp = fmemopen((void *)text, strlen(text), "r");
    trace *t = NULL;
    int rc = trace_read(fp, "mem.trace", &t);
    fclose(fp);
    trace_free(t);
    expect_message(rc, SS_EINPUT, needle);
}

/* A version past any integer was read as -1 and got "re-record it"; it is out of range, and the
 * message says which version this syncsim reads. */
static void test_trace_version_out_of_range(void) {
    expect_trace_error("# syncsim-trace 99999999999999999999\n",
                       "mem.trace:1: trace format version 99999999999999999999 is out of range; "
                       "this syncsim reads version 2");
    expect_trace_error("# syncsim-trace 2147483648\n", "is out of range");
    expect_trace_error("# syncsim-trace -1\n", "mem.trace:1: malformed trace format version '-1'");
    expect_trace_error("# syncsim-trace 2x\n", "malformed trace format version '2x'");
    expect_trace_error("# syncsim-trace 3\n", "newer syncsim");
}

static void expect_profile_error(const char *text, const char *needle) {
    FILE *fp = fmemopen((void *)text, strlen(text), "r");
    model_profile p;
    int rc = profile_read(fp, "mem.profile", &p);
    fclose(fp);
    if (rc == SS_OK) profile_free(&p);
    expect_message(rc, SS_EINPUT, needle);
}

/* "batch 0" meant "not given" and the replay ran at batch 64; a batch outside 1..1000000 is
 * refused, the file and line named. */
static void test_profile_batch_range(void) {
    expect_profile_error("syncsim-profile 1\nname t\nbatch 0\nlayer a 10 100\ntotal 10 100\n",
                         "mem.profile:3: batch must be an integer from 1 to 1000000, not '0'");
    expect_profile_error("syncsim-profile 1\nname t\nbatch 2e6\nlayer a 10 100\ntotal 10 100\n",
                         "mem.profile:3: batch must be an integer from 1 to 1000000");
    expect_profile_error("syncsim-profile 1\nname t\nbatch 3.5\nlayer a 10 100\ntotal 10 100\n",
                         "mem.profile:3: batch must be an integer");
    const char *ok = "syncsim-profile 1\nname t\nbatch 32\nlayer a 10 100\ntotal 10 100\n";
    FILE *fp = fmemopen((void *)ok, strlen(ok), "r");
    model_profile p;
    CU_ASSERT_EQUAL(profile_read(fp, "mem.profile", &p), SS_OK);
    fclose(fp);
    CU_ASSERT_EQUAL(p.batch, 32);
    profile_free(&p);
}

/* ---- interruptions ---- */

/* The size of the first file of dir whose name contains `part` (-1: none). */
static long long file_with(const char *dir, const char *part) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    long long size = -1;
    struct dirent *e;
    while (size < 0 && (e = readdir(d)))
        if (strstr(e->d_name, part)) {
            char path[1024];
            struct stat st;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (stat(path, &st) == 0) size = (long long)st.st_size;
        }
    closedir(d);
    return size;
}

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Waits up to `limit_s` for the child to end; its wait status, or -1 (then it is killed). */
static int wait_child(pid_t pid, double limit_s) {
    const double t0 = seconds_now();
    int status;
    while (seconds_now() - t0 < limit_s) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) return status;
        usleep(20000); /* polling the child's state, not standing in for it */
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

/* Starts a long replay with --record, waits until its steps.trace.tmp file holds records (the
 * simulation is running: records are written as steps complete), sends `sig`, and checks: exit
 * 130, summary.json with status "interrupted" and fewer steps than asked, the recorded steps.trace
 * complete (its end line) and no temporary file left. */
#define PLANNED_STEPS 2000

static void check_replay_interrupted(int workers, int sig, const char *name) {
    char dir[512], log[600], steps[32], nworkers[32];
    snprintf(dir, sizeof dir, "%s/%s", out_root, name);
    snprintf(log, sizeof log, "%s.log", dir);
    snprintf(nworkers, sizeof nworkers, "%d", workers);
    /* more steps than run before the signal (it comes once the first record is written), few
     * enough that the recorded trace (its header says the steps planned) reads back fast, also
     * in the sanitizer build */
    snprintf(steps, sizeof steps, "%d", PLANNED_STEPS);
    char exe[600];
    snprintf(exe, sizeof exe, "%s/syncsim", SS_BINARY_DIR);
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        if (!freopen(log, "w", stdout) || dup2(fileno(stdout), 2) < 0) _exit(99);
        execl(exe, exe, "replay", "--profile", "resnet101", "--policy", "bsp", "--workers",
              nworkers, "--steps", steps, "--record", "--out", dir, (char *)NULL);
        _exit(98);
    }
    const double t0 = seconds_now();
    int running = 0, status = 0;
    while (!running && seconds_now() - t0 < 300) {
        if (waitpid(pid, &status, WNOHANG) == pid) break; /* ended before running: fails below */
        running = file_with(dir, "steps.trace.tmp.") > 0;
        if (!running) usleep(20000);
    }
    if (!running) {
        fprintf(stderr, "\n  %s: the replay never wrote a record (see %s)\n", name, log);
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        CU_FAIL_FATAL("replay running");
    }
    CU_ASSERT_EQUAL(kill(pid, sig), 0);
    status = wait_child(pid, 300);
    int code = status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code != 130) {
        char cmd[700];
        fprintf(stderr, "\n  %s: wait status %d (exit %d), log:\n", name, status, code);
        snprintf(cmd, sizeof cmd, "tail -5 %s >&2", log);
        CU_ASSERT_EQUAL(system(cmd), 0);
    }
    CU_ASSERT_EQUAL(code, 130);
    char path[700];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    run_summary s;
    CU_ASSERT_EQUAL_FATAL(summary_read(path, &s), SS_OK);
    CU_ASSERT_STRING_EQUAL(s.status, "interrupted");
    if (!(s.steps >= 1 && s.steps < PLANNED_STEPS))
        fprintf(stderr, "\n  %s: %ld steps\n", name, s.steps);
    CU_ASSERT(s.steps >= 1 && s.steps < PLANNED_STEPS);
    CU_ASSERT_EQUAL(file_with(dir, ".tmp."), -1);
    snprintf(path, sizeof path, "%s/steps.trace", dir);
    trace *t = NULL;
    int rc = trace_load(path, &t);
    if (rc != SS_OK) fprintf(stderr, "\n  %s\n", ss_error_message());
    CU_ASSERT_EQUAL(rc, SS_OK);
    if (t) CU_ASSERT_EQUAL(t->steps_done, s.steps);
    trace_free(t);
}

static void test_replay_sigint(void) {
    check_replay_interrupted(64, SIGINT, "sigint-64");
}

#ifndef __SANITIZE_ADDRESS__
static void test_replay_sigint_256(void) {
    check_replay_interrupted(256, SIGINT, "sigint-256");
}
#endif

static void test_replay_sigterm(void) {
    check_replay_interrupted(64, SIGTERM, "sigterm-64");
}

static int suite_init(void) {
    snprintf(out_root, sizeof out_root, "/tmp/ss_test_traces_input_%d", (int)getpid());
    return mkdir(out_root, 0700) == 0 ? 0 : 1;
}

static int suite_clean(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", out_root);
    return system(cmd) == 0 ? 0 : 1;
}

static CU_TestInfo input_tests[] = {
    {"directories, devices and FIFOs refused by type (trace, profile, log)",
     test_special_files_refused},
    {"an endless line: trace_read, profile_read and the import stop at their line limit",
     test_endless_line_bounded},
    {"trace_import_csv_stream: a missing row is refused, named", test_import_missing_rows},
    {"trace_read: a version past any integer is out of range", test_trace_version_out_of_range},
    {"profile_read: batch outside 1..1000000 refused", test_profile_batch_range},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo interrupt_tests[] = {
    {"syncsim replay: SIGINT at 64 workers: exit 130, interrupted, no temporary file",
     test_replay_sigint},
#ifndef __SANITIZE_ADDRESS__ /* 256 actors as threads (the sanitizer build's SimGrid contexts)     \
                                take minutes to start there; the 64-worker cases cover the path */
    {"syncsim replay: SIGINT at 256 workers: exit 130, interrupted, no temporary file",
     test_replay_sigint_256},
#endif
    {"syncsim replay --record: SIGTERM: exit 130, interrupted, steps.trace complete",
     test_replay_sigterm},
    CU_TEST_INFO_NULL,
};

int main(void) {
    CU_SuiteInfo suites[] = {
        {"traces bad input", suite_init, suite_clean, NULL, NULL, input_tests},
        {"replay interrupted", suite_init, suite_clean, NULL, NULL, interrupt_tests},
        CU_SUITE_INFO_NULL,
    };
    return ss_test_main(suites);
}
