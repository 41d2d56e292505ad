/* One simulation per process: runs a whole SimGrid simulation in a forked child and brings its
 * result back as bytes.
 *
 * Why: SimGrid 3.32 creates its engine once per process. A second simgrid_init() +
 * simgrid_load_platform() aborts ("Refusing to create a second NetZone"), the network model cannot
 * change after initialization, the clock never goes back to 0, and the C API has no way to destroy
 * the engine. So anything that runs several simulations (test suites, `compare`, `bench`, sweeps)
 * runs each one through isolate_call(); a program that runs exactly one simulation may call
 * sim_cluster_open() directly.
 *
 *     static int one_run(void *arg, isolate_blob *result) {      // runs in the child
 *         sim_cluster *c; int st = sim_cluster_open(arg, &c); if (st) return st;
 *         ... spawn actors, sim_cluster_simulate(c, &end_s) ...
 *         isolate_blob_append(result, &end_s, sizeof end_s);
 *         sim_cluster_close(c); return SS_OK;
 *     }
 *     isolate_blob out = {0};
 *     int st = isolate_call(one_run, &opts, &out);        // in the parent
 *     if (st != SS_OK) fprintf(stderr, "syncsim: %s\n", ss_error_message());
 *     ... read out.data (out.bytes) ...; isolate_blob_free(&out);
 *
 * The child's status and ss_error_message() come back to the parent as they were set in the
 * child. A child that dies (SimGrid abort, signal, exit without reporting) gives SS_EIO with a
 * message naming the signal or exit code; SimGrid's own text is on stderr above it.
 *
 * SIGINT, SIGTERM and SIGHUP belong to the parent while a child runs: the child runs with them
 * blocked (SimGrid's own SIGINT handler calls exit() inside the signal, which can deadlock) and
 * dies with the parent. On one, the parent kills the child, waits for it, passes the signal on to
 * its own handler if it has one (common/outputs.h's flag) and returns SS_EINTERRUPT; nothing is
 * left running. A caller already interrupted (outputs_interrupted()) starts no child.
 *
 * Many whole runs side by side (`compare`, `sweep`) go through the job pool, isolate_pool_run():
 * each job a forked child with its output in its own log file, at most J at once, and one behaviour
 * on SIGINT/SIGTERM for all of them (see isolate_pool_run):
 *
 *     static int prepare(void *ctx, int j) { return done_already(j) ? SIM_POOL_SKIP : SS_OK; }
 *     static void log_path(void *ctx, int j, char *buf, size_t n) { snprintf(buf, n, ...); }
 *     static int run(void *ctx, int j) { return ss_status_exit_code(one_run(j)); } // child
 *     static void done(void *ctx, int j, const isolate_job_end *e) { printf(... e->exit_code); }
 *     isolate_pool pool = {n, jobs, ctx, prepare, log_path, run, done};
 *     isolate_pool_report rep;
 *     int st = isolate_pool_run(&pool, NULL, &rep);   // rep.interrupted: a signal stopped it
 */
#ifndef SS_SIM_ISOLATE_H
#define SS_SIM_ISOLATE_H

#include <stddef.h>

/* A growable byte buffer: the result of one isolated simulation. Zero-initialize before use. */
typedef struct isolate_blob {
    unsigned char *data; /* (bytes) */
    size_t bytes;        /* used */
    size_t cap_bytes;    /* allocated */
} isolate_blob;

void isolate_blob_append(isolate_blob *b, const void *data, size_t bytes);
void isolate_blob_free(isolate_blob *b); /* frees data and zeroes the struct */

/* The simulation to run in the child: returns a status (ss_error_set on failure) and appends its
 * result to `result`. It may create the SimGrid engine (sim_cluster_open) exactly once. */
typedef int (*isolate_fn)(void *arg, isolate_blob *result);

/* Forks, runs fn(arg, result) in the child, and returns its status; `result` receives the
 * child's bytes (appended). stdout/stderr are flushed before the fork and by the child before it
 * exits, so output written by the child to inherited streams appears once, in order. */
int isolate_call(isolate_fn fn, void *arg, isolate_blob *result);

/* ---- the job pool ---- */

#define SIM_POOL_SKIP (-1) /* prepare(): do not run this job (it counts as handled) */

/* How one job ended. */
typedef struct isolate_job_end {
    int started;   /* 1: forked (0: skipped, or never reached: pool interrupted or stopped) */
    int finished;  /* 1: the child ended and was waited for */
    int exit_code; /* the child's exit code; 128 + N when signal N killed it */
    int signal;    /* the signal that killed it (0: it exited) */
    double wall_s; /* from the start of the pool to the end of the job */
} isolate_job_end;

typedef struct isolate_pool {
    int n_jobs;      /* jobs 0..n_jobs-1, started in this order */
    int max_running; /* J: children at once (>= 1) */
    void *ctx;       /* passed to the callbacks */
    /* Parent, just before job j would start: SS_OK runs it, SIM_POOL_SKIP passes over it, any
     * other status stops the pool (no new job; the running ones end normally) and is returned.
     * NULL: every job runs. */
    int (*prepare)(void *ctx, int job);
    /* Parent: the log file of job j; the child creates its directory and sends its stdout and
     * stderr there. NULL: the child keeps the parent's streams. */
    void (*log_path)(void *ctx, int job, char *buf, size_t n);
    /* Child: the job itself; its return value is the child's exit code. */
    int (*run)(void *ctx, int job);
    /* Parent, as each started job ends (in the order they end). NULL: nothing. */
    void (*done)(void *ctx, int job, const isolate_job_end *end);
} isolate_pool;

typedef struct isolate_pool_report {
    int started, skipped, not_started; /* not_started: never reached (interrupted, stopped) */
    int failed;                        /* started jobs with an exit code other than 0 */
    int interrupted;                   /* SIGINT, SIGTERM or SIGHUP arrived while the pool ran */
} isolate_pool_report;

/* Runs the jobs, at most max_running children at once, and waits for every child it started.
 * While it runs, SIGINT, SIGTERM and SIGHUP are caught (the previous handlers are restored on
 * return, and are the children's): on the first signal no job starts any more and every running
 * child gets SIGTERM, so that it stops cleanly and its outputs say "interrupted"; a second signal
 * SIGKILLs them. Children die with the parent (PR_SET_PDEATHSIG), so a killed pool leaves no
 * orphan. `ends` (n_jobs entries, may be NULL) and `rep` (may be NULL) say what became of each
 * job. Returns SS_OK, prepare()'s status, or SS_EIO when fork fails; an interruption is not an
 * error: rep->interrupted says it. */
int isolate_pool_run(const isolate_pool *pool, isolate_job_end *ends, isolate_pool_report *rep);

#endif
