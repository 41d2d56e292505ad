/* The compute engine (engine.h): a pool of threads - 1 pthreads taking tasks from one FIFO
 * queue, and the caller, which runs queued tasks while it waits for one. A free thread takes the
 * oldest task whose home is its slot, else the oldest whose home thread is busy (or that has no
 * home); a task whose home thread waits for work is left to it, so that a replica's steps run on
 * one core, its data in that core's caches, as long as the load is even. */
#include "common/engine.h"
#include "common/afile.h"
#include "common/status.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct trace_event {
    const char *name;
    int id;
    double t0, t1; /* engine_now_s */
} trace_event;

typedef struct trace_lane { /* one slot's, written by its thread only */
    trace_event *ev;
    size_t n, cap;
    long dropped;
} trace_lane;

struct engine {
    int threads;       /* that compute: the pool's threads - 1 and the caller in engine_wait */
    trace_lane *lanes; /* (threads) while tracing, else NULL */
    double trace_t0;
    pthread_t *tids;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t *wake; /* (threads - 1) a pool thread's: a task for it, or the pool stops */
    pthread_cond_t done;  /* a task finished */
    int *idle;  /* (threads) 1 unless the slot's thread runs a task: it takes its own next (a pool
                   thread from its start; the caller's slot never, it runs the simulation) */
    int *woken; /* (threads) an idle pool thread signalled and not yet awake: a task is on its
                   way to it, so the next one wakes another (a signal is not counted: two to a
                   sleeping thread wake it once) */
    int homes;  /* 0: SYNCSIM_ENGINE_HOMES=0, every task taken in queue order */
    engine_task *head, *tail;
    int stopping;
};

typedef struct pool_thread {
    engine *en;
    int slot;
} pool_thread;

double engine_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void engine_trace_span(engine *en, int slot, const char *name, int id, double t0_s, double t1_s) {
    if (!en->lanes || slot < 0 || slot >= en->threads) return;
    trace_lane *l = &en->lanes[slot];
    if (l->n == ENGINE_TRACE_MAX_EVENTS) {
        l->dropped++;
        return;
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->ev = realloc(l->ev, l->cap * sizeof *l->ev);
        SS_ASSERT(l->ev != NULL);
    }
    l->ev[l->n++] = (trace_event){name ? name : "task", id, t0_s, t1_s};
}

/* t's run in slot `slot`, on the timeline when one is kept */
static void run_task(engine *en, engine_task *t, int slot) {
    if (!en->lanes) {
        t->run(t->arg, slot);
        return;
    }
    const double t0 = engine_now_s();
    t->run(t->arg, slot);
    engine_trace_span(en, slot, t->name, t->id, t0, engine_now_s());
}

/* Takes t, queued after prev (NULL: at the head), out of the queue (with en->mu held). */
static void unlink_task(engine *en, engine_task *t, engine_task *prev) {
    if (prev)
        prev->next = t->next;
    else
        en->head = t->next;
    if (en->tail == t) en->tail = prev;
    t->next = NULL;
}

/* The slot of t's home thread, or -1 (none, or homes off). */
static int home_of(const engine *en, const engine_task *t) {
    return en->homes && t->home > 0 ? (t->home - 1) % en->threads : -1;
}

/* The task slot `slot` takes: the oldest whose home it is, else the oldest whose home thread is
 * not waiting for work (any, once the pool stops); taken out of the queue. NULL: none (called
 * with en->mu held). */
static engine_task *take(engine *en, int slot) {
    engine_task *other = NULL, *other_prev = NULL, *prev = NULL, *t = en->head;
    for (; t; prev = t, t = t->next) {
        const int home = home_of(en, t);
        if (home == slot) break;
        if (!other && (home < 0 || !en->idle[home] || en->stopping)) other = t, other_prev = prev;
    }
    if (!t) t = other, prev = other_prev;
    if (t) unlink_task(en, t, prev);
    return t;
}

/* Runs t, taken from the queue, in slot `slot` (called and returning with en->mu held). */
static void run_taken(engine *en, engine_task *t, int slot) {
    t->state = 2;
    pthread_mutex_unlock(&en->mu);
    run_task(en, t, slot);
    pthread_mutex_lock(&en->mu);
    t->state = 3;
    pthread_cond_broadcast(&en->done);
}

static void *pool_main(void *arg) {
    pool_thread pt = *(pool_thread *)arg;
    free(arg);
    engine *en = pt.en;
    pthread_mutex_lock(&en->mu);
    for (;;) {
        engine_task *t = take(en, pt.slot);
        if (t) {
            en->idle[pt.slot] = 0;
            run_taken(en, t, pt.slot);
            en->idle[pt.slot] = 1;
            continue;
        }
        if (en->stopping && !en->head) break; /* stopping, and the queue is empty */
        pthread_cond_wait(&en->wake[pt.slot], &en->mu);
        en->woken[pt.slot] = 0;
    }
    pthread_mutex_unlock(&en->mu);
    return NULL;
}

/* Signals slot's pool thread (called with en->mu held). */
static void wake(engine *en, int slot) {
    en->woken[slot] = 1;
    pthread_cond_signal(&en->wake[slot]);
}

/* Wakes the thread that should take t: its home's if that one waits, else a pool thread that
 * waits and has not been woken for an earlier task (called with en->mu held); also the latter
 * when the home was woken already, for the task that it will now take second. None when every
 * pool thread runs a task or is on its way to one: each takes tasks until the queue has none it
 * may take. */
static void wake_for(engine *en, const engine_task *t) {
    const int home = home_of(en, t);
    if (home >= 0 && home < en->threads - 1 && en->idle[home]) {
        const int woken_before = en->woken[home];
        wake(en, home);
        if (!woken_before) return;
    }
    for (int s = 0; s < en->threads - 1; s++)
        if (en->idle[s] && !en->woken[s]) {
            wake(en, s);
            return;
        }
}

int engine_create(int threads, engine **out) {
    *out = NULL;
    if (threads < 1 || threads > ENGINE_MAX_THREADS)
        return ss_error_set(SS_EUSAGE, "engine: %d threads (give 1 to %d)", threads,
                            ENGINE_MAX_THREADS);
    engine *en = ss_calloc(1, sizeof *en);
    en->threads = threads;
    const char *homes = getenv("SYNCSIM_ENGINE_HOMES");
    en->homes = !(homes && !strcmp(homes, "0"));
    en->idle = ss_calloc((size_t)threads, sizeof *en->idle);
    en->woken = ss_calloc((size_t)threads, sizeof *en->woken);
    for (int i = 0; i < threads - 1; i++)
        en->idle[i] = 1;
    en->wake = ss_calloc((size_t)threads, sizeof *en->wake);
    pthread_mutex_init(&en->mu, NULL);
    for (int i = 0; i < threads; i++)
        pthread_cond_init(&en->wake[i], NULL);
    pthread_cond_init(&en->done, NULL);
    if (threads > 1) { /* slots 0 .. threads - 2; the caller's is threads - 1 */
        en->tids = ss_calloc((size_t)threads - 1, sizeof(pthread_t));
        for (int i = 0; i < threads - 1; i++) {
            pool_thread *pt = ss_malloc(sizeof *pt);
            *pt = (pool_thread){en, i};
            int rc = pthread_create(&en->tids[i], NULL, pool_main, pt);
            if (rc != 0) {
                free(pt);
                engine_destroy(en);
                return ss_error_set(SS_ENOMEM, "engine: cannot start thread %d of %d: %s", i + 1,
                                    threads - 1, strerror(rc));
            }
            en->started++;
        }
    }
    *out = en;
    return SS_OK;
}

void engine_destroy(engine *en) {
    if (!en) return;
    pthread_mutex_lock(&en->mu);
    en->stopping = 1;
    for (int i = 0; i < en->threads; i++)
        pthread_cond_signal(&en->wake[i]);
    pthread_mutex_unlock(&en->mu);
    for (int i = 0; i < en->started; i++)
        pthread_join(en->tids[i], NULL);
    if (en->lanes)
        for (int i = 0; i < en->threads; i++)
            free(en->lanes[i].ev);
    free(en->lanes);
    for (int i = 0; i < en->threads; i++)
        pthread_cond_destroy(&en->wake[i]);
    free(en->wake);
    free(en->idle);
    free(en->woken);
    pthread_cond_destroy(&en->done);
    pthread_mutex_destroy(&en->mu);
    free(en->tids);
    free(en);
}

int engine_threads(const engine *en) {
    return en->threads;
}

void engine_submit(engine *en, engine_task *t) {
    SS_ASSERT(t->state == 0 || t->state == 3);
    if (en->started == 0) {
        run_task(en, t, 0);
        t->state = 3;
        return;
    }
    pthread_mutex_lock(&en->mu);
    t->next = NULL;
    t->state = 1;
    if (en->tail)
        en->tail->next = t;
    else
        en->head = t;
    en->tail = t;
    wake_for(en, t);
    pthread_mutex_unlock(&en->mu);
}

void engine_wait(engine *en, engine_task *t) {
    if (en->started == 0) return;
    const int me = en->threads - 1;
    pthread_mutex_lock(&en->mu);             /* t->state changes under it */
    while (t->state == 1 || t->state == 2) { /* queued or running; idle or done: return */
        engine_task *q = take(en, me);       /* the caller computes too, rather than wait idle */
        if (q) {
            run_taken(en, q, me);
            continue;
        }
        /* the tasks homed here may go to other threads while the caller waits (it takes none
         * then: they find it busy) */
        const double t0 = en->lanes ? engine_now_s() : 0.0;
        pthread_cond_wait(&en->done, &en->mu);
        if (en->lanes) engine_trace_span(en, me, "wait", -1, t0, engine_now_s());
    }
    pthread_mutex_unlock(&en->mu);
}

int engine_cancel(engine *en, engine_task *t) {
    if (en->started == 0) return 0; /* one thread: submit ran it */
    int cancelled = 0;
    pthread_mutex_lock(&en->mu);
    if (t->state == 1) {
        engine_task *prev = NULL;
        for (engine_task *q = en->head; q && q != t; q = q->next)
            prev = q;
        unlink_task(en, t, prev);
        t->state = 0;
        cancelled = 1;
    }
    pthread_mutex_unlock(&en->mu);
    return cancelled;
}

void engine_trace_start(engine *en) {
    if (en->lanes) return;
    en->lanes = ss_calloc((size_t)en->threads, sizeof *en->lanes);
    en->trace_t0 = engine_now_s();
}

int engine_trace_write(const engine *en, const char *path) {
    afile f;
    int rc = afile_open(&f, path);
    if (rc != SS_OK) return rc;
    long dropped = 0;
    for (int s = 0; en->lanes && s < en->threads; s++)
        dropped += en->lanes[s].dropped;
    fprintf(f.fp,
            "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"threads\": %d, \"dropped\": %ld},\n"
            "\"traceEvents\": [\n",
            en->threads, dropped);
    for (int s = 0; s < en->threads; s++) /* a row's name; threads >= 1: events follow a comma */
        fprintf(f.fp,
                "%s{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": %d, "
                "\"args\": {\"name\": \"%s %d\"}}",
                s ? ",\n" : "", s,
                s == en->threads - 1 ? "simulation thread, slot" : "engine thread, slot", s);
    for (int s = 0; en->lanes && s < en->threads; s++)
        for (size_t i = 0; i < en->lanes[s].n; i++) {
            const trace_event *e = &en->lanes[s].ev[i];
            fprintf(f.fp,
                    ",\n{\"name\": \"%s\", \"cat\": \"engine\", \"ph\": \"X\", \"pid\": 1, "
                    "\"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"id\": %d}}",
                    e->name, s, 1e6 * (e->t0 - en->trace_t0), 1e6 * (e->t1 - e->t0), e->id);
        }
    fprintf(f.fp, "\n]}\n");
    return afile_commit(&f);
}

static int shared_by_jobs = 1;

int engine_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 ? (n > ENGINE_MAX_THREADS ? ENGINE_MAX_THREADS : (int)n) : 1;
}

/* An integer from a one-line sysfs file; -1 when absent or not a number. */
static long sysfs_long(const char *dir, int cpu, const char *file) {
    char path[1024];
    snprintf(path, sizeof path, "%s/cpu%d/%s", dir, cpu, file);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long v = -1;
    if (fscanf(f, "%ld", &v) != 1) v = -1;
    fclose(f);
    return v;
}

int engine_physical_cores(const char *sysfs_cpu_dir, int *logical) {
    enum { MAX_CPUS = 4096 };
    long *ids = ss_malloc(sizeof(long) * 2 * MAX_CPUS);
    int cpus = 0, cores = 0, missing = 0;
    for (int c = 0; c < MAX_CPUS && missing < 64; c++) {
        const long pkg = sysfs_long(sysfs_cpu_dir, c, "topology/physical_package_id");
        const long core = sysfs_long(sysfs_cpu_dir, c, "topology/core_id");
        if (pkg < 0 || core < 0) { /* no such CPU, or offline (no topology): numbers may skip */
            missing++;
            continue;
        }
        missing = 0;
        if (sysfs_long(sysfs_cpu_dir, c, "online") == 0) continue;
        cpus++;
        int seen = 0;
        for (int i = 0; i < cores && !seen; i++)
            seen = ids[2 * i] == pkg && ids[2 * i + 1] == core;
        if (!seen) ids[2 * cores] = pkg, ids[2 * cores + 1] = core, cores++;
    }
    free(ids);
    if (logical) *logical = cpus;
    return cores;
}

void engine_share_cores(int jobs) {
    shared_by_jobs = jobs >= 1 ? jobs : 1;
}

int engine_parse_threads(const char *text, int *threads) {
    if (!*text || !strcmp(text, "auto")) {
        int n = engine_cores() / shared_by_jobs;
        *threads = n >= 1 ? n : 1;
        return SS_OK;
    }
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (!*text || *end || errno || v < 1 || v > ENGINE_MAX_THREADS)
        return ss_error_set(SS_EUSAGE,
                            "--threads %s: give a thread count from 1 to %d, or auto (this "
                            "machine's %d cores)",
                            text, ENGINE_MAX_THREADS, engine_cores());
    *threads = (int)v;
    return SS_OK;
}
