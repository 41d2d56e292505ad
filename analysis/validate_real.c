#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "analysis/validate_real.h"
#include "common/afile.h"
#include "common/status.h"
#include "common/units.h"
#include "common/summary.h"
#include "sim/policy/policy_registry.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ARGS 64

/* One command line under construction. */
typedef struct argv_buf {
    char *v[MAX_ARGS + 1];
    int n;
    char text[MAX_ARGS][256];
} argv_buf;

static void arg(argv_buf *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void arg(argv_buf *a, const char *fmt, ...) {
    SS_ASSERT(a->n < MAX_ARGS);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->text[a->n], sizeof a->text[a->n], fmt, ap);
    va_end(ap);
    a->v[a->n] = a->text[a->n];
    a->v[++a->n] = NULL;
}

static double wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static volatile sig_atomic_t interrupted;
static void on_signal(int sig) {
    (void)sig;
    interrupted = 1;
}

/* Starts the command with stdout on fd (>= 0; closed here), and stderr too when `both`; else on
 * ours. fork and
 * execv, not posix_spawn with `environ`: a reference to environ from the executable would copy
 * it there, and OpenMPI (opened with RTLD_DEEPBIND by real mode) would then see a stale one. */
static pid_t spawn(const argv_buf *a, int fd, int both) {
    pid_t pid = fork();
    if (pid == 0) {
        if (fd >= 0 && (dup2(fd, 1) < 0 || (both && dup2(fd, 2) < 0))) _exit(127);
        execv(a->v[0], a->v);
        _exit(127);
    }
    if (fd >= 0) close(fd);
    return pid;
}

/* Runs the command with its output appended to `log` (or to ours when NULL); its exit status,
 * 128 + the signal that ended it, or -1 when it could not start. Echoes the command on `out`. */
static int run_command_limit(const argv_buf *a, const char *log, FILE *out, double *took_s,
                             double limit_s);

/* A prediction that runs longer than this is stopped (ns-3 can take very long on a congested
 * parameter server); a real run or an emulation, than the longer one. */
#define PREDICT_LIMIT_S 300.0
#define RUN_LIMIT_S     3600.0

static int run_command(const argv_buf *a, const char *log, FILE *out, double *took_s) {
    return run_command_limit(a, log, out, took_s, RUN_LIMIT_S);
}

/* The command's exit status, 128 + its signal, 124 when it ran past limit_s (it is then
 * stopped), or -1 when it could not start. */
static int run_command_limit(const argv_buf *a, const char *log, FILE *out, double *took_s,
                             double limit_s) {
    fprintf(out, "  $");
    for (int i = 0; i < a->n; i++)
        fprintf(out, " %s", a->v[i]);
    fprintf(out, "%s%s\n", log ? "  > " : "", log ? log : "");
    fflush(out);
    const double t0 = wall_s();
    pid_t pid = spawn(a, log ? open(log, O_WRONLY | O_CREAT | O_APPEND, 0644) : -1, 1);
    if (pid < 0) return -1;
    int status = 0, over = 0;
    for (;;) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid || (got < 0 && errno != EINTR)) break;
        if (!over && wall_s() - t0 > limit_s) {
            fprintf(out, "  (stopped after %.0f s)\n", limit_s);
            kill(pid, SIGKILL);
            over = 1;
        }
        struct timespec nap = {.tv_sec = 0, .tv_nsec = 20 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    if (took_s) *took_s = wall_s() - t0;
    if (over) return 124;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void testbed_cmd(const validate_real_opts *o, argv_buf *a, const char *verb) {
    memset(a, 0, sizeof *a);
    arg(a, "/bin/bash");
    arg(a, "%s", o->testbed);
    arg(a, "%s", verb);
}

/* The options every run of the case shares: the training configuration. */
static void training_args(const validate_real_opts *o, const char *policy, argv_buf *a) {
    arg(a, "--policy");
    arg(a, "%s", policy);
    arg(a, "--workers");
    arg(a, "%d", o->workers);
    arg(a, "--model");
    arg(a, "%s", o->model);
    arg(a, "--dataset");
    arg(a, "%s", o->dataset);
    if (o->data_dir && o->data_dir[0]) {
        arg(a, "--data-dir");
        arg(a, "%s", o->data_dir);
    }
    arg(a, "--epochs");
    arg(a, "%.15g", o->epochs);
    arg(a, "--batch");
    arg(a, "%d", o->batch);
    arg(a, "--seed");
    arg(a, "%llu", (unsigned long long)o->seed);
    arg(a, "--progress");
    arg(a, "no");
    /* the CPU on both sides: the real run's ranks compute on it (real mode's auto), and an
     * emulation left to auto would take a GPU, whose rounding differs from the CPU's */
    arg(a, "--device");
    arg(a, "cpu");
}

static int is_async(const char *policy) {
    return !strcmp(policy, "ssp") || !strcmp(policy, "asp");
}

/* Whether the case overlaps: --overlap on, for a policy that takes it (BSP and FedAvg: their
 * all-reduces). */
static int overlaps(const validate_real_opts *o, const char *policy) {
    const policy_info *p = policy_registry_find(policy);
    return o->overlap && p && policy_option_applies(policy_option_find("overlap"), p);
}

/* --overlap on --bucket-mb B to every run of an overlapping case: real, emulated and predicted. */
static void overlap_args(const validate_real_opts *o, const char *policy, argv_buf *a) {
    if (!overlaps(o, policy)) return;
    arg(a, "--overlap");
    arg(a, "on");
    arg(a, "--bucket-mb");
    arg(a, "%.17g", o->bucket_mb);
}

/* What a run gave: its total time, its mean communication (comm + wait) per synchronized step
 * and worker, its final accuracy (summary.json: a replay writes no trace of its own). */
typedef struct run_figures {
    double total_s, comm_s, accuracy, wall_s, params;
    long gap_hist[SUMMARY_HIST_BINS]; /* SSP/ASP: clock gaps when steps started */
    int gap_bins;                     /* 0: none recorded */
} run_figures;

static int read_figures(const char *dir, run_figures *f) {
    char path[1200];
    run_summary s;
    snprintf(path, sizeof path, "%s/summary.json", dir);
    int rc = summary_read(path, &s);
    if (rc != SS_OK) return rc;
    f->total_s = s.sim_time_s;
    f->accuracy = s.test_accuracy;
    f->params = s.params;
    f->comm_s = s.sync_steps > 0 ? (s.comm_s + s.wait_s) / (double)s.sync_steps : 0;
    f->gap_bins = s.clock_gap_bins;
    memcpy(f->gap_hist, s.clock_gap_hist, sizeof f->gap_hist);
    return SS_OK;
}

/* ---- one case: a policy on the testbed ---- */

typedef struct case_dirs {
    char base[1024], real[1100], emu[1100], log[1100];
} case_dirs;

size_t validate_real_eager_limit(double param_bytes) {
    /* the vector, OpenMPI's headers (ob1's and the TCP transport's, a few dozen bytes), to 4 KiB */
    double b = ceil((param_bytes + 1024.0) / 4096.0) * 4096.0;
    if (!(b > VALIDATE_REAL_EAGER_MIN)) b = VALIDATE_REAL_EAGER_MIN;
    return b > VALIDATE_REAL_EAGER_MAX ? 0 : (size_t)b;
}

/* Whether this process may start a program at real-time priority with chrt (root, chrt in PATH,
 * and a scheduler that grants SCHED_RR: a container may have no real-time budget). */
static int can_run_realtime(void) {
    static int known = -1;
    if (known >= 0) return known;
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        execlp("chrt", "chrt", "--rr", VALIDATE_REAL_RT_PRIORITY_TEXT, "true", (char *)NULL);
        _exit(127);
    }
    int status = 1;
    if (pid > 0)
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    known = pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    return known;
}

/* How the real ranks of a case are scheduled: real-time (SCHED_RR) when it can be had and the
 * case does not overlap (a progress thread at its rank's real-time priority would wait behind
 * the rank's compute on a shared core), else niceness VALIDATE_REAL_NICE; "" without root. */
static const char *rank_scheduling(const validate_real_opts *o, const char *policy) {
    if (geteuid() != 0) return "";
    return !overlaps(o, policy) && can_run_realtime()
               ? "real-time priority (SCHED_RR " VALIDATE_REAL_RT_PRIORITY_TEXT ")"
               : "niceness " VALIDATE_REAL_NICE_TEXT;
}

static int run_real(const validate_real_opts *o, const char *policy, const case_dirs *d,
                    double param_bytes, FILE *out) {
    argv_buf a;
    testbed_cmd(o, &a, "run");
    arg(&a, "-np");
    arg(&a, "%d", o->workers + is_async(policy));
    /* the synchronous policies' messages eagerly (validate_real_eager_limit), unless the caller
     * chose OpenMPI's eager limit (OMPI_MCA_btl_tcp_eager_limit) */
    const size_t eager = validate_real_eager_limit(param_bytes);
    if (!is_async(policy) && !getenv("OMPI_MCA_btl_tcp_eager_limit")) {
        if (eager) {
            arg(&a, "--mca");
            arg(&a, "btl_tcp_eager_limit");
            arg(&a, "%zu", eager);
        } else {
            fprintf(out,
                    "  note: %.0f MB of parameters is past the eager limit validate real sets "
                    "(%d MiB): two ranks that exchange in both directions at once send one "
                    "direction after the other (docs/REAL.md), which no prediction models\n",
                    param_bytes / 1e6, VALIDATE_REAL_EAGER_MAX >> 20);
        }
    }
    /* idle ranks yield the CPU (they would spin in MPI's progress loop, against the kernel's
     * network processing on a machine with few cores), and OpenMPI's all-reduce is the one the
     * prediction simulates: its ring (tuned algorithm 4) for --collective ring, its
     * Rabenseifner (recursive halving then doubling, algorithm 6) for hd, its recursive
     * doubling (algorithm 3) for rd */
    const char *algorithm = !strcmp(o->collective, "hd")   ? "6"
                            : !strcmp(o->collective, "rd") ? "3"
                                                           : "4";
    const char *const mca[][2] = {{"mpi_yield_when_idle", "1"},
                                  {"coll_tuned_use_dynamic_rules", "1"},
                                  {"coll_tuned_allreduce_algorithm", algorithm}};
    for (size_t i = 0; i < sizeof mca / sizeof mca[0]; i++) {
        arg(&a, "--mca");
        arg(&a, "%s", mca[i][0]);
        arg(&a, "%s", mca[i][1]);
    }
    arg(&a, "--");
    /* the ranks before the host's other work: on a busy host a rank that waits for a core holds
     * up every exchange it is part of (the testbed needs root, which may raise a priority) */
    const char *sched = rank_scheduling(o, policy);
    if (!strncmp(sched, "real-time", 9)) {
        arg(&a, "chrt");
        arg(&a, "--rr");
        arg(&a, "%s", VALIDATE_REAL_RT_PRIORITY_TEXT);
    } else if (sched[0]) {
        arg(&a, "nice");
        arg(&a, "-n");
        arg(&a, "%d", VALIDATE_REAL_NICE);
    }
    arg(&a, "%s", o->exe);
    arg(&a, "real");
    training_args(o, policy, &a);
    arg(&a, "--collective");
    arg(&a, "%s", o->collective);
    overlap_args(o, policy, &a);
    arg(&a, "--out");
    arg(&a, "%s", d->real);
    double took;
    int st = run_command(&a, d->log, out, &took);
    return st == 0
               ? SS_OK
               : ss_error_set(SS_EIO, "validate real: the real %s run failed (status %d): see %s",
                              policy, st, d->log);
}

static int run_emulation(const validate_real_opts *o, const char *policy, const case_dirs *d,
                         FILE *out) {
    argv_buf a = {0};
    arg(&a, "%s", o->exe);
    arg(&a, "train");
    training_args(o, policy, &a);
    if (!is_async(policy)) {
        arg(&a, "--collective");
        arg(&a, "%s", o->collective);
    }
    overlap_args(o, policy, &a);
    arg(&a, "--out");
    arg(&a, "%s", d->emu);
    int st = run_command(&a, d->log, out, NULL);
    return st == 0 ? SS_OK
                   : ss_error_set(SS_EIO,
                                  "validate real: the emulation of %s failed (status %d): "
                                  "see %s",
                                  policy, st, d->log);
}

/* The real run's trace replayed with its measured compute on the testbed's platform; with
 * jitter > 0 (SSP/ASP), every server message's time on the wire varies with that CV. */
static int predict(const validate_real_opts *o, const char *policy, const char *model,
                   double jitter, const case_dirs *d, FILE *out, run_figures *f) {
    char dir[1200], trace[1200], platform[1200];
    snprintf(platform, sizeof platform, "%s/testbed-%s.xml", o->out_dir, model);
    snprintf(dir, sizeof dir, "%s/%s%s", d->base, model, jitter > 0 ? "-jitter" : "");
    snprintf(trace, sizeof trace, "%s/steps.trace", d->real);
    argv_buf a = {0};
    arg(&a, "%s", o->exe);
    arg(&a, "replay");
    arg(&a, "--trace");
    arg(&a, "%s", trace);
    arg(&a, "--platform");
    arg(&a, "%s", platform);
    arg(&a, "--network-model");
    arg(&a, "%s", model);
    if (jitter > 0) {
        arg(&a, "--comm-jitter");
        arg(&a, "%g", jitter);
    }
    overlap_args(o, policy, &a); /* the trace's "# layer" lines time the backward pass */
    arg(&a, "--out");
    arg(&a, "%s", dir);
    double took = 0;
    int st = run_command_limit(&a, d->log, out, &took, PREDICT_LIMIT_S);
    if (st != 0)
        return ss_error_set(SS_EIO, "validate real: the %s prediction %s (status %d): see %s",
                            model, st == 124 ? "took too long" : "failed", st, d->log);
    int rc = read_figures(dir, f);
    f->wall_s = took;
    return rc;
}

static double rel_error(double predicted, double measured) {
    return measured > 0 ? (predicted - measured) / measured : NAN;
}

static const char *const validate_real_models[3] = {"LV08", "SMPI", "ns-3"};

typedef struct case_result {
    run_figures real, emu, pred[4];
    const char *model[4];
    double jitter[4];
    int n_models;
} case_result;

static int run_case(const validate_real_opts *o, const char *policy, FILE *out, case_result *cr) {
    case_dirs d;
    snprintf(d.base, sizeof d.base, "%s/%s", o->out_dir, policy);
    snprintf(d.real, sizeof d.real, "%s/real", d.base);
    snprintf(d.emu, sizeof d.emu, "%s/emulation", d.base);
    snprintf(d.log, sizeof d.log, "%s/commands.log", d.base);
    int rc = ss_mkdir_p(d.base);
    if (rc == SS_OK) unlink(d.log);
    /* the emulation first: its summary gives the parameter bytes the real run's eager limit
     * needs */
    if (rc == SS_OK) rc = run_emulation(o, policy, &d, out);
    if (rc == SS_OK) rc = read_figures(d.emu, &cr->emu);
    if (rc == SS_OK) rc = run_real(o, policy, &d, 4.0 * cr->emu.params, out);
    if (rc == SS_OK) rc = read_figures(d.real, &cr->real);
    /* the flow models, LV08 and SMPI (LV08 with size-dependent TCP factors), then ns-3 */
    cr->n_models = 0;
    for (int m = 0; m < 3; m++)
        if (m < 2 || (o->ns3 && !overlaps(o, policy)))
            cr->model[cr->n_models++] = validate_real_models[m];
    if (o->ns3 && overlaps(o, policy))
        fprintf(out, "  ns-3: not run (SimGrid's ns-3 binding aborts when overlapped buckets "
                     "congest a link; replay refuses --overlap on under ns-3)\n");
    /* SSP/ASP: also LV08 with the message jitter of real TCP's uneven shares (validate_real.h) */
    if (is_async(policy) && o->ps_jitter > 0) {
        cr->jitter[cr->n_models] = o->ps_jitter;
        cr->model[cr->n_models++] = "LV08";
    }
    for (int m = 0; m < cr->n_models && rc == SS_OK && !interrupted; m++) {
        rc = predict(o, policy, cr->model[m], cr->jitter[m], &d, out, &cr->pred[m]);
        if (rc != SS_OK && !strcmp(cr->model[m], "ns-3")) { /* ns-3 has limits of its own */
            fprintf(out, "  %s: %s\n", cr->model[m], ss_error_message());
            cr->pred[m].total_s = NAN;
            rc = SS_OK;
        }
    }
    if (rc == SS_OK && interrupted) rc = ss_error_set(SS_EINTERRUPT, "validate real: interrupted");
    return rc;
}

/* ---- the testbed and its platform ---- */

static int testbed(const validate_real_opts *o, const char *verb, int hosts, FILE *out,
                   const char *log) {
    argv_buf a;
    testbed_cmd(o, &a, verb);
    if (!strcmp(verb, "up")) {
        arg(&a, "%d", hosts);
        arg(&a, "%.0fkbit", 8 * o->rate_Bps / 1e3);
        if (o->delay_s > 0) arg(&a, "%.6gms", o->delay_s * 1e3); /* 0: no netem needed */
    }
    return run_command(&a, log, out, NULL);
}

/* A star of the testbed's hosts: every link at the rate, split-duplex, with the delay (a route
 * crosses two links, as a packet crosses two shaped veth ends); one server host for SSP. */
static int write_platform(const validate_real_opts *o, const char *model, const char *path,
                          FILE *out) {
    argv_buf a = {0};
    arg(&a, "%s", o->exe);
    arg(&a, "platform");
    arg(&a, "--hosts");
    arg(&a, "%d", o->workers);
    arg(&a, "--ps");
    arg(&a, "1");
    arg(&a, "--bandwidth");
    arg(&a, "%.0fbps", 8 * o->rate_Bps);
    arg(&a, "--latency");
    arg(&a, "%.9gs", o->delay_s > 0 ? o->delay_s : 1e-6);
    arg(&a, "--network-model"); /* ns-3 takes the star as explicit routes */
    arg(&a, "%s", model);
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    fprintf(out, "  (the testbed's platform for %s: %s)\n", model, path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return ss_error_set(SS_EIO, "%s: %s", tmp, strerror(errno));
    pid_t pid = spawn(&a, fd, 0);
    int status = 1, st = pid < 0;
    if (pid > 0)
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    if (st != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || rename(tmp, path) != 0)
        return ss_error_set(SS_EIO, "validate real: could not write the platform %s", path);
    return SS_OK;
}

/* The last non-empty line of a file (the testbed's message), or "status unknown". */
static void last_line(const char *path, char *line, size_t n) {
    snprintf(line, n, "status unknown");
    FILE *f = fopen(path, "r");
    if (!f) return;
    char buf[512];
    while (fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\n")] = 0;
        if (buf[0]) snprintf(line, n, "%s", buf);
    }
    fclose(f);
}

/* ---- report ---- */

static void print_gaps(FILE *out, const run_figures *f) {
    fprintf(out, " [");
    for (int i = 0; i < f->gap_bins; i++)
        fprintf(out, "%s%ld", i ? " " : "", f->gap_hist[i]);
    fprintf(out, "]");
}

static int report_case(const validate_real_opts *o, const char *policy, const case_result *cr,
                       FILE *out, FILE *csv) {
    const double acc_pp = 100.0 * (cr->real.accuracy - cr->emu.accuracy);
    double best_time = INFINITY, best_comm = INFINITY;
    for (int m = 0; m < cr->n_models; m++) {
        const run_figures *p = &cr->pred[m];
        if (isnan(p->total_s)) continue; /* the model could not run this case */
        double et = rel_error(p->total_s, cr->real.total_s);
        double ec = rel_error(p->comm_s, cr->real.comm_s);
        char name[32];
        snprintf(name, sizeof name, cr->jitter[m] > 0 ? "%s+J%g" : "%s", cr->model[m],
                 cr->jitter[m]);
        fprintf(out,
                "  %-8s %-9s measured %8.3f s, predicted %8.3f s (%+6.1f%%) | comm/sync step "
                "%8.4f s vs %8.4f s (%+6.1f%%) | prediction wall %.1f s\n",
                policy, name, cr->real.total_s, p->total_s, 100 * et, cr->real.comm_s, p->comm_s,
                100 * ec, p->wall_s);
        fprintf(csv, "%s,%s,%d,%.0f,%.9g,%.9g,%.9g,%.6f,%.9g,%.9g,%.6f,%.3f,%.6f,%.6f,%.4f\n",
                policy, name, o->workers, 8 * o->rate_Bps, o->delay_s, cr->real.total_s, p->total_s,
                et, cr->real.comm_s, p->comm_s, ec, p->wall_s, cr->real.accuracy, cr->emu.accuracy,
                acc_pp);
        if (fabs(et) < best_time) best_time = fabs(et);
        if (fabs(ec) < best_comm) best_comm = fabs(ec);
    }
    /* SSP/ASP: how far ahead of the slowest worker each step started, real against predicted */
    if (is_async(policy)) {
        fprintf(out, "  %-8s clock gaps 0, 1, 2, ...: real", policy);
        print_gaps(out, &cr->real);
        for (int m = 0; m < cr->n_models; m++) {
            if (isnan(cr->pred[m].total_s)) continue;
            fprintf(out, cr->jitter[m] > 0 ? ", %s+J%g" : ", %s", cr->model[m], cr->jitter[m]);
            print_gaps(out, &cr->pred[m]);
        }
        fprintf(out, "\n");
    }
    /* SSP/ASP follow real timing: their staleness, and so their model, is the run's own */
    const int acc_bound = !is_async(policy);
    fprintf(out, "  %-8s accuracy: real %.4f, emulation %.4f (%+.2f pp%s)\n", policy,
            cr->real.accuracy, cr->emu.accuracy, acc_pp,
            acc_bound ? "" : "; not bounded: the staleness follows each run's timing");
    return best_time <= o->max_error && best_comm <= o->max_error &&
           (!acc_bound || fabs(acc_pp) <= o->max_acc_pp);
}

static int run_cases(const validate_real_opts *o, FILE *out, FILE *csv, validate_real_result *res) {
    char list[256];
    snprintf(list, sizeof list, "%s", o->policies);
    int rc = SS_OK;
    for (char *save = NULL, *p = strtok_r(list, ",", &save); p && rc == SS_OK;
         p = strtok_r(NULL, ",", &save)) {
        const char *sched = rank_scheduling(o, p);
        if (overlaps(o, p))
            fprintf(out, "%s on %d workers, overlap on (buckets of %g MiB)", p, o->workers,
                    o->bucket_mb);
        else
            fprintf(out, "%s on %d workers", p, o->workers);
        fprintf(out, "%s%s:\n", sched[0] ? ", real ranks at " : "", sched);
        case_result cr;
        memset(&cr, 0, sizeof cr);
        rc = run_case(o, p, out, &cr);
        if (rc != SS_OK) break;
        res->cases++;
        if (!report_case(o, p, &cr, out, csv)) res->within = 0;
    }
    return rc;
}

int validate_real(const validate_real_opts *o, FILE *out, validate_real_result *res) {
    memset(res, 0, sizeof *res);
    /* a testbed instance of this run's own, unless the caller named one */
    char name[64];
    snprintf(name, sizeof name, "validate-%ld", (long)getpid());
    setenv("SYNCSIM_TESTBED_NAME", name, 0);
    res->within = 1;
    int rc = ss_mkdir_p(o->out_dir);
    if (rc != SS_OK) return rc;
    char platform[1100], csv_path[1100], csv_tmp[1200], log[1100];
    snprintf(csv_path, sizeof csv_path, "%s/validate_real.csv", o->out_dir);
    snprintf(csv_tmp, sizeof csv_tmp, "%s.tmp", csv_path);
    snprintf(log, sizeof log, "%s/testbed.log", o->out_dir);
    for (int m = 0; m < (o->ns3 ? 3 : 2) && rc == SS_OK; m++) {
        const char *model = validate_real_models[m];
        snprintf(platform, sizeof platform, "%s/testbed-%s.xml", o->out_dir, model);
        rc = write_platform(o, model, platform, out);
    }
    if (rc != SS_OK) return rc;
    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    fprintf(out, "testbed: %d hosts at %.4g Mbit/s, %.4g ms per link direction\n", o->workers + 1,
            8 * o->rate_Bps / 1e6, o->delay_s * 1e3);
    int st = testbed(o, "up", o->workers + 1, out, log);
    if (st != 0) {
        char why[512];
        last_line(log, why, sizeof why);
        rc = ss_error_set(st == 2 ? SS_EUSAGE : SS_EIO,
                          "validate real: the testbed did not come up (%s; all of it in %s)", why,
                          log);
    } else {
        FILE *csv = fopen(csv_tmp, "w");
        if (!csv) {
            rc = ss_error_set(SS_EIO, "%s: %s", csv_tmp, strerror(errno));
        } else {
            fprintf(csv, "policy,network_model,workers,rate_bps,delay_s,measured_s,predicted_s,"
                         "time_error,measured_comm_s,predicted_comm_s,comm_error,"
                         "prediction_wall_s,accuracy_real,accuracy_emulation,accuracy_diff_pp\n");
            rc = run_cases(o, out, csv, res);
            if (fclose(csv) != 0 && rc == SS_OK) rc = ss_error_set(SS_EIO, "%s", csv_tmp);
            if (rc == SS_OK && rename(csv_tmp, csv_path) != 0)
                rc = ss_error_set(SS_EIO, "%s: %s", csv_path, strerror(errno));
            if (rc != SS_OK) unlink(csv_tmp);
        }
    }
    testbed(o, "down", 0, out, log); /* always, whatever happened */
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (rc == SS_OK)
        fprintf(out,
                "%d case(s): %s (bounds: %.0f%% on time and comm with the better model, "
                "%.2f pp on accuracy); %s\n",
                res->cases, res->within ? "within the bounds" : "OUTSIDE the bounds",
                100 * o->max_error, o->max_acc_pp, csv_path);
    return rc;
}

int validate_real_host_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int validate_real_fit_host(int cores, const char *policies, int workers, char *policies_out,
                           size_t policies_size, int *workers_out, char *why, size_t why_size) {
    char list[256];
    snprintf(list, sizeof list, "%s", policies);
    int most = 0, sync_workers = workers, async_workers = workers;
    for (char *save = NULL, *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save))
        if (workers + is_async(p) > most) most = workers + is_async(p);
    snprintf(policies_out, policies_size, "%s", policies);
    *workers_out = workers;
    if (why && why_size) why[0] = '\0';
    if (most <= cores) return 0;
    sync_workers = cores > 2 ? cores : 2;
    if (sync_workers > workers) sync_workers = workers;
    async_workers = cores - 1;
    /* one worker count for every policy kept (the cases compare policies on one cluster): the
     * synchronous policies' when SSP/ASP would get fewer than 2 workers (left out), else the
     * smaller */
    int keep_async = async_workers >= 2;
    const int w = keep_async && async_workers < sync_workers ? async_workers : sync_workers;
    size_t len = 0;
    char dropped[256] = "";
    size_t ld = 0;
    policies_out[0] = '\0';
    snprintf(list, sizeof list, "%s", policies);
    for (char *save = NULL, *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if (is_async(p) && !keep_async) {
            ld += (size_t)snprintf(dropped + ld, ld < sizeof dropped ? sizeof dropped - ld : 0,
                                   "%s%s", ld ? "," : "", p);
            continue;
        }
        len += (size_t)snprintf(policies_out + len, len < policies_size ? policies_size - len : 0,
                                "%s%s", len ? "," : "", p);
    }
    *workers_out = w;
    if (!policies_out[0]) return -1; /* nothing this host can run faithfully */
    if (why && why_size) {
        size_t lw = (size_t)snprintf(why, why_size,
                                     "this host has %d core%s for up to %d ranks (a worker each, "
                                     "and a server for ssp/asp): ranks sharing cores wait for the "
                                     "CPU in their exchanges, which no prediction models "
                                     "(docs/REAL.md). Running the case it can run faithfully: %s "
                                     "on %d workers",
                                     cores, cores == 1 ? "" : "s", most, policies_out, w);
        if (ld && lw < why_size)
            lw += (size_t)snprintf(why + lw, why_size - lw,
                                   " (%s left out: with its server it needs 3 cores or more)",
                                   dropped);
        /* --policy takes one policy; --workers alone keeps the default list */
        if (lw < why_size)
            snprintf(why + lw, why_size - lw, ". --workers %d runs the requested case as it is.",
                     workers);
    }
    return 1;
}

int validate_real_run(const run_config *cfg, FILE *out, validate_real_result *res) {
    return validate_real_run_on_host(cfg, 0, out, res);
}

int validate_real_run_on_host(const run_config *cfg, int fit_host, FILE *out,
                              validate_real_result *res) {
    char exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return ss_error_set(SS_EIO, "validate real: cannot find the syncsim binary");
    exe[n] = 0;
    const char *testbed = getenv("SYNCSIM_TESTBED");
    /* auto (the default) has no OpenMPI counterpart: the real run and syncsim both run the ring */
    const char *collective = strcmp(cfg->collective, "auto") ? cfg->collective : "ring";
    validate_real_opts o = {.exe = exe,
                            .testbed = testbed ? testbed : SS_SOURCE_DIR "/scripts/testbed.sh",
                            .out_dir = cfg->out_dir,
                            .policies = cfg->policy[0] ? cfg->policy : "bsp,selsync,ssp",
                            .collective = collective,
                            .workers = cfg->workers,
                            .model = cfg->model,
                            .dataset = cfg->dataset,
                            .data_dir = cfg->data_dir,
                            .epochs = cfg->epochs,
                            .batch = cfg->batch,
                            .seed = cfg->seed,
                            .ns3 = 1,
                            .ps_jitter = VALIDATE_REAL_PS_JITTER,
                            .max_error = 0.10,
                            .max_acc_pp = 0.3,
                            .overlap = !strcmp(policy_option_value(cfg, "overlap")->text, "on"),
                            .bucket_mb = policy_option_value(cfg, "bucket-mb")->d};
    /* a host with fewer cores than ranks: fit the case to it (fit_host), or say that its ranks
     * share cores */
    const int cores = validate_real_host_cores();
    char fitted[256], why[1024];
    int fitted_workers;
    const int changed = validate_real_fit_host(cores, o.policies, o.workers, fitted, sizeof fitted,
                                               &fitted_workers, why, sizeof why);
    const char *bandwidth = cfg->bandwidth;
    if (changed && (fit_host & VALIDATE_REAL_FIT_CASE)) {
        if (changed < 0)
            return ss_error_set(SS_EUSAGE,
                                "validate real: this host has %d core(s): no case of %s runs "
                                "with a core per rank (give --workers and --policy to run one "
                                "anyway)",
                                cores, o.policies);
        fprintf(out, "host: %s\n", why);
        o.policies = fitted;
        o.workers = fitted_workers;
        if (fit_host & VALIDATE_REAL_FIT_RATE) {
            bandwidth = VALIDATE_REAL_FIT_BANDWIDTH;
            fprintf(out,
                    "host: at " VALIDATE_REAL_FIT_BANDWIDTH_TEXT
                    " (--bandwidth not given): at 1 Gbit/s the compute between "
                    "exchanges refills each testbed link's token bucket (1 ms of traffic at the "
                    "rate), which then lets part of every message through faster than the rate, "
                    "as no link the predictions describe does (docs/REAL.md); --bandwidth 1Gbps "
                    "runs that rate.\n");
        }
    } else if (changed) {
        fprintf(out,
                "host: warning: %d core(s) for up to %d ranks: the real runs' exchanges wait for "
                "the CPU, which no prediction models; expect the measured times to exceed the "
                "predictions (docs/REAL.md)\n",
                cores, o.workers + 1);
    } else {
        fprintf(out, "host: %d cores, a core per rank\n", cores);
    }
    /* other work on the host competes with the ranks as well: said, not hidden */
    double load = -1;
    FILE *lf = fopen("/proc/loadavg", "r");
    if (lf) {
        if (fscanf(lf, "%lf", &load) != 1) load = -1;
        fclose(lf);
    }
    if (load > cores && geteuid() == 0 && can_run_realtime())
        fprintf(out,
                "host: warning: load average %.1f on %d cores before the runs: the real ranks run "
                "ahead of that work at real-time priority, but stop when they have used the "
                "kernel's real-time budget (sched_rt_runtime_us, 95 %% of each second by "
                "default), and a busy host delays the testbed's packets\n",
                load, cores);
    else if (load > cores)
        fprintf(out,
                "host: warning: load average %.1f on %d cores before the runs: other work competes "
                "with the real ranks, whose exchanges then wait for the CPU (measured times above "
                "the predictions); run it on an idle host\n",
                load, cores);
    double bytes_per_s;
    if (units_parse_bandwidth(bandwidth, &bytes_per_s) != 0 || !(bytes_per_s > 0))
        return ss_error_set(SS_EUSAGE,
                            "--bandwidth '%s': expected a rate such as 100Mbps or "
                            "1Gbps (the testbed's links)",
                            bandwidth);
    if (units_parse_time(cfg->latency, &o.delay_s) != 0 || o.delay_s < 0)
        return ss_error_set(SS_EUSAGE,
                            "--latency '%s': expected 0s or a time such as 0.1ms (the "
                            "delay added on each link direction; it needs the "
                            "kernel's netem)",
                            cfg->latency);
    if (strcmp(collective, "ring") && strcmp(collective, "hd") && strcmp(collective, "rd"))
        return ss_error_set(SS_EUSAGE,
                            "validate real --collective %s: ring (OpenMPI's ring, tuned "
                            "algorithm 4), hd (its Rabenseifner, 6) or rd (its recursive "
                            "doubling, 3), or auto for ring: the all-reduces both the real run "
                            "and syncsim have",
                            cfg->collective);
    o.rate_Bps = bytes_per_s;
    return validate_real(&o, out, res);
}
