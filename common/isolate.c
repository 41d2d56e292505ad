/* isolate_call: fork, run, pipe the status, message and result back; isolate_pool_run: many
 * such children, J at once, with logs and one interruption rule (see isolate.h). */
#include "common/isolate.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/afile.h"
#include "common/outputs.h"
#include "common/status.h"

/* What the child writes first, then msg_bytes of message, then blob_bytes of result. */
typedef struct isolate_header {
    uint32_t magic;
    int32_t status;
    uint64_t msg_bytes;
    uint64_t blob_bytes;
} isolate_header;

#define ISOLATE_MAGIC 0x53494d31u /* "SIM1" */

void isolate_blob_append(isolate_blob *b, const void *data, size_t bytes) {
    SS_ASSERT(b != NULL && (data != NULL || bytes == 0));
    if (b->bytes + bytes > b->cap_bytes) {
        size_t cap = b->cap_bytes ? b->cap_bytes : 256;
        while (cap < b->bytes + bytes)
            cap *= 2;
        unsigned char *p = realloc(b->data, cap);
        SS_ASSERT(p != NULL);
        b->data = p;
        b->cap_bytes = cap;
    }
    if (bytes) memcpy(b->data + b->bytes, data, bytes);
    b->bytes += bytes;
}

void isolate_blob_free(isolate_blob *b) {
    if (!b) return;
    free(b->data);
    memset(b, 0, sizeof *b);
}

static int write_all(int fd, const void *data, size_t bytes) {
    const unsigned char *p = data;
    while (bytes > 0) {
        ssize_t n = write(fd, p, bytes);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        bytes -= (size_t)n;
    }
    return 0;
}

static void child_main(int fd, isolate_fn fn, void *arg) {
    isolate_blob result = {0};
    int status = fn(arg, &result);
    const char *msg = status == SS_OK ? "" : ss_error_message();
    isolate_header h = {ISOLATE_MAGIC, status, strlen(msg), result.bytes};
    fflush(NULL);
    int bad = write_all(fd, &h, sizeof h) || write_all(fd, msg, h.msg_bytes) ||
              write_all(fd, result.data, result.bytes);
    close(fd);
    /* _exit: SimGrid's engine and atexit handlers of the parent's state must not run twice. */
    _exit(bad ? 3 : 0);
}

static volatile sig_atomic_t isolate_signal; /* SIGINT/SIGTERM/SIGHUP while a child runs */

static void isolate_on_signal(int sig) {
    isolate_signal = sig;
}

/* The signals that stop a run, and the caller's handlers of them while a child runs. */
static const int stop_signals[3] = {SIGINT, SIGTERM, SIGHUP};

/* The caller's handler sees the signal as if no child had run (a flag for a run that stops
 * cleanly); SS_EINTERRUPT. */
static int isolate_pass_on(const struct sigaction *old) {
    const int sig = isolate_signal;
    for (int k = 0; k < 3; k++)
        if (stop_signals[k] == sig && old[k].sa_handler != SIG_DFL && old[k].sa_handler != SIG_IGN)
            raise(sig);
    return ss_error_set(SS_EINTERRUPT, "interrupted (%s): the simulation was stopped",
                        strsignal(sig));
}

int isolate_call(isolate_fn fn, void *arg, isolate_blob *result) {
    SS_ASSERT(fn != NULL && result != NULL);
    if (outputs_interrupted()) /* the caller was interrupted between two simulations */
        return ss_error_set(SS_EINTERRUPT, "interrupted: no further simulation started");
    int fds[2];
    if (pipe(fds) != 0)
        return ss_error_set(SS_EIO, "simulation: cannot create a pipe: %s", strerror(errno));
    /* SIGINT, SIGTERM and SIGHUP are the parent's to handle: the child is forked with them
     * blocked (it keeps them blocked: SimGrid's own SIGINT handler calls exit() inside the
     * signal, which deadlocked on malloc's lock) and dies with the parent */
    struct sigaction sa, old[3];
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = isolate_on_signal;
    sigemptyset(&sa.sa_mask);
    sigset_t stop, before;
    sigemptyset(&stop);
    for (int k = 0; k < 3; k++)
        sigaddset(&stop, stop_signals[k]);
    isolate_signal = 0;
    sigprocmask(SIG_BLOCK, &stop, &before);
    for (int k = 0; k < 3; k++)
        sigaction(stop_signals[k], &sa, &old[k]);
    const pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(1); /* the parent died before prctl */
        close(fds[0]);
        child_main(fds[1], fn, arg);
    }
    const int fork_errno = errno;
    sigprocmask(SIG_SETMASK, &before, NULL);
    if (pid < 0) {
        for (int k = 0; k < 3; k++)
            sigaction(stop_signals[k], &old[k], NULL);
        close(fds[0]);
        close(fds[1]);
        return ss_error_set(SS_EIO, "simulation: cannot fork: %s", strerror(fork_errno));
    }
    close(fds[1]);
    isolate_blob raw = {0};
    unsigned char buf[65536];
    for (;;) {
        if (isolate_signal) break;
        struct pollfd pfd = {fds[0], POLLIN, 0};
        if (poll(&pfd, 1, 100) <= 0) continue; /* a signal, or 100 ms: look at the flag */
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        isolate_blob_append(&raw, buf, (size_t)n);
    }
    close(fds[0]);
    if (isolate_signal) kill(pid, SIGKILL); /* interrupted: nothing left running */
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    for (int k = 0; k < 3; k++)
        sigaction(stop_signals[k], &old[k], NULL);
    if (isolate_signal) { /* also when it came as the child ended: the user's request to stop */
        isolate_blob_free(&raw);
        return isolate_pass_on(old);
    }
    int st;
    isolate_header h;
    if (WIFSIGNALED(wstatus)) {
        int sig = WTERMSIG(wstatus);
        st = ss_error_set(
            SS_EIO, "simulation process killed by signal %d (%s)%s", sig, strsignal(sig),
            sig == SIGABRT ? ": SimGrid or an assertion aborted, see the message above" : "");
    } else if (raw.bytes < sizeof h) {
        st = ss_error_set(SS_EIO, "simulation process exited with code %d without a result",
                          WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
    } else {
        memcpy(&h, raw.data, sizeof h);
        if (h.magic != ISOLATE_MAGIC || raw.bytes != sizeof h + h.msg_bytes + h.blob_bytes) {
            st = ss_error_set(SS_EIO, "simulation process sent a truncated result (%zu bytes)",
                              raw.bytes);
        } else {
            st = h.status;
            if (st != SS_OK)
                ss_error_set(st, "%.*s", (int)h.msg_bytes, (const char *)raw.data + sizeof h);
            isolate_blob_append(result, raw.data + sizeof h + h.msg_bytes, h.blob_bytes);
        }
    }
    isolate_blob_free(&raw);
    return st;
}

/* ---- the job pool ---- */

static volatile sig_atomic_t pool_signals; /* SIGINT/SIGTERM received while a pool runs */

static void pool_on_signal(int sig) {
    (void)sig;
    pool_signals++;
}

typedef struct pool_state {
    const isolate_pool *pool;
    isolate_job_end *ends;
    pid_t *pids; /* (n_jobs) 0: not running */
    struct sigaction old_int, old_term, old_hup;
    double t0_s;
    int next, running, kill_sent;
} pool_state;

static double monotonic_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The child of job j: the caller's signal handlers back, dies with the parent, output in the
 * job's log file. Never returns. */
static void pool_child(pool_state *s, int j) {
    sigaction(SIGINT, &s->old_int, NULL);
    sigaction(SIGTERM, &s->old_term, NULL);
    sigaction(SIGHUP, &s->old_hup, NULL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    const isolate_pool *p = s->pool;
    if (p->log_path) {
        char log[1400];
        p->log_path(p->ctx, j, log, sizeof log);
        char *slash = strrchr(log, '/');
        if (slash && slash != log) {
            *slash = '\0';
            int made = ss_mkdir_p(log);
            *slash = '/';
            if (made != SS_OK) _exit(1);
        }
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
    }
    int code = p->run(p->ctx, j);
    fflush(NULL);
    _exit(code);
}

/* Starts jobs until max_running run, the list ends, a signal came or prepare() refuses. */
static int pool_launch(pool_state *s, isolate_pool_report *rep) {
    const isolate_pool *p = s->pool;
    while (s->running < p->max_running && s->next < p->n_jobs && !pool_signals) {
        const int j = s->next;
        const int st = p->prepare ? p->prepare(p->ctx, j) : SS_OK;
        if (st == SIM_POOL_SKIP) {
            s->next++;
            rep->skipped++;
            continue;
        }
        if (st != SS_OK) return st;
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) return ss_error_set(SS_EIO, "cannot fork a job: %s", strerror(errno));
        if (pid == 0) pool_child(s, j);
        s->next++;
        s->pids[j] = pid;
        s->ends[j].started = 1;
        s->running++;
        rep->started++;
    }
    return SS_OK;
}

/* Signals every running child: SIGTERM after the first interruption, SIGKILL after the second. */
static void pool_forward_signals(pool_state *s) {
    const int want = pool_signals >= 2 ? 2 : pool_signals >= 1 ? 1 : 0;
    if (want <= s->kill_sent) return;
    for (int j = 0; j < s->pool->n_jobs; j++)
        if (s->pids[j] > 0) kill(s->pids[j], want == 2 ? SIGKILL : SIGTERM);
    s->kill_sent = want;
}

/* Waits for a child to end, at most 50 ms (a signal that arrives just before a blocking wait
 * would otherwise reach the children only when one of them ends); 0 when none is left. */
static int pool_reap(pool_state *s, isolate_pool_report *rep) {
    int wstatus;
    pid_t pid = waitpid(-1, &wstatus, WNOHANG);
    if (pid < 0) return errno == EINTR ? 1 : 0;
    if (pid == 0) {
        const struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL); /* a signal cuts it short */
        return 1;
    }
    for (int j = 0; j < s->pool->n_jobs; j++) {
        if (s->pids[j] != pid) continue;
        s->pids[j] = 0;
        s->running--;
        isolate_job_end *e = &s->ends[j];
        e->finished = 1;
        e->signal = WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0;
        e->exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + e->signal;
        e->wall_s = monotonic_s() - s->t0_s;
        rep->failed += e->exit_code != 0;
        if (s->pool->done) s->pool->done(s->pool->ctx, j, e);
    }
    return 1;
}

int isolate_pool_run(const isolate_pool *pool, isolate_job_end *ends, isolate_pool_report *rep) {
    SS_ASSERT(pool && pool->run && pool->max_running >= 1 && pool->n_jobs >= 0);
    isolate_pool_report local;
    if (!rep) rep = &local;
    memset(rep, 0, sizeof *rep);
    const size_t n = (size_t)(pool->n_jobs ? pool->n_jobs : 1);
    pool_state s = {.pool = pool, .t0_s = monotonic_s()};
    s.ends = ends ? ends : ss_malloc(n * sizeof *s.ends);
    memset(s.ends, 0, n * sizeof *s.ends);
    s.pids = ss_calloc(n, sizeof *s.pids);
    pool_signals = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = pool_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &s.old_int);
    sigaction(SIGTERM, &sa, &s.old_term);
    sigaction(SIGHUP, &sa, &s.old_hup);
    int rc = SS_OK;
    for (;;) {
        if (rc == SS_OK) rc = pool_launch(&s, rep);
        if (s.running == 0) break;
        pool_forward_signals(&s);
        if (!pool_reap(&s, rep)) break;
    }
    rep->interrupted = pool_signals > 0;
    sigaction(SIGINT, &s.old_int, NULL);
    sigaction(SIGTERM, &s.old_term, NULL);
    sigaction(SIGHUP, &s.old_hup, NULL);
    for (int j = 0; j < pool->n_jobs; j++)
        rep->not_started += !s.ends[j].started;
    rep->not_started -= rep->skipped;
    free(s.pids);
    if (!ends) free(s.ends);
    return rc;
}
