/* The CPU backend's passes split over threads (cpu_par.h). The threads are started on the first
 * split pass and then wait for the next one: starting and joining a thread for each pass cost
 * 48-50 us on the 2-core machine the kernels are benchmarked on, as much as a batch norm's pass
 * over 3 MB takes, and a training step makes about a hundred such passes. */
#include "kernels/cpu_par.h"

#include <cblas.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>

/* CPU_PAR_SPIN_NS: how long a pool thread that has finished its part watches for the next pass,
 * and the caller for the last part's end, before sleeping on a condition variable. A wake-up
 * from that sleep took longer than a batch norm's pass over 3 MB (about 65 us) on the 2-core
 * machine, so that passes of that size ran as fast on 2 threads as on one; a step's passes
 * mostly follow one another within microseconds. */
enum { CPU_PAR_MAX = 64, CPU_PAR_SPIN_NS = 100000 };
static int64_t watch_ns = CPU_PAR_SPIN_NS; /* cpu_par_set_watch_ns */

typedef struct par_part {
    size_t i0, i1;
} par_part;

/* One pass at a time through the pool (`use`); a pass that finds it taken (another thread of
 * the process splitting at the same time) runs its parts in its own thread, with the same bits.
 * Everything else under `mu`: a pass is posted by bumping `gen`; the pool's threads and the
 * caller take its parts in turn (`next`), so a thread that wakes late takes none, or the parts
 * of the pass then posted; `pending` counts the parts not yet finished by the pool. */
static struct {
    pthread_mutex_t use, mu;
    pthread_cond_t wake, done;
    int started;                /* threads running in this process */
    unsigned long gen, pending; /* written under mu, also read by watch() */
    cpu_par_fn fn;
    void *ctx;
    par_part part[CPU_PAR_MAX];
    int parts, next;
    int atfork;
    unsigned long watching, quiet; /* threads in watch(); bumped by cpu_par_quiet() */
} pool = {.use = PTHREAD_MUTEX_INITIALIZER,
          .mu = PTHREAD_MUTEX_INITIALIZER,
          .wake = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER};

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Watches *v (read without pool.mu) for up to watch_ns: 1 as soon as (*v != x) == differ
 * holds, 0 at the end of the watch or when cpu_par_quiet() is called during it. Yields the core
 * between looks, so that a thread that needs it (OpenBLAS's, the caller's) gets it. */
static int watch(const unsigned long *v, unsigned long x, int differ) {
    const int64_t t0 = now_ns(), span = __atomic_load_n(&watch_ns, __ATOMIC_RELAXED);
    /* quiet read before counting in: a cpu_par_quiet() that sees this thread counted changes it
     * after this read */
    const unsigned long quiet = __atomic_load_n(&pool.quiet, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&pool.watching, 1, __ATOMIC_SEQ_CST);
    int seen = 0;
    for (unsigned i = 1;; i++) {
        if ((__atomic_load_n(v, __ATOMIC_ACQUIRE) != x) == differ) {
            seen = 1;
            break;
        }
        if (__atomic_load_n(&pool.quiet, __ATOMIC_RELAXED) != quiet) break;
        if (i % 16 == 0) {
            if (now_ns() - t0 > span) break;
            sched_yield();
        }
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    __atomic_sub_fetch(&pool.watching, 1, __ATOMIC_RELAXED);
    return seen;
}

void cpu_par_quiet(void) {
    if (__atomic_load_n(&pool.watching, __ATOMIC_SEQ_CST))
        __atomic_add_fetch(&pool.quiet, 1, __ATOMIC_SEQ_CST);
}

int cpu_par_watching(void) {
    return (int)__atomic_load_n(&pool.watching, __ATOMIC_SEQ_CST);
}

void cpu_par_set_watch_ns(long long ns) {
    __atomic_store_n(&watch_ns, ns < 0 ? (int64_t)CPU_PAR_SPIN_NS : (int64_t)ns, __ATOMIC_RELAXED);
}

/* Runs the pass's unclaimed parts (called and returning with pool.mu held); a pool thread
 * (`mine`) wakes the caller when the last part is done. */
static void take_parts(int mine) {
    while (pool.next < pool.parts) {
        const int i = pool.next++;
        const par_part p = pool.part[i];
        cpu_par_fn fn = pool.fn;
        void *ctx = pool.ctx;
        pthread_mutex_unlock(&pool.mu);
        fn(ctx, p.i0, p.i1);
        pthread_mutex_lock(&pool.mu);
        const unsigned long left = __atomic_sub_fetch(&pool.pending, 1, __ATOMIC_RELEASE);
        if (mine && left == 0) pthread_cond_signal(&pool.done);
    }
}

/* arg: the generation before the pass that started the thread, so that it takes part in it */
static void *pool_main(void *arg) {
    unsigned long seen = (unsigned long)(uintptr_t)arg;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        if (pool.gen == seen) {
            pthread_mutex_unlock(&pool.mu);
            watch(&pool.gen, seen, 1);
            pthread_mutex_lock(&pool.mu);
        }
        while (pool.gen == seen)
            pthread_cond_wait(&pool.wake, &pool.mu);
        seen = pool.gen;
        take_parts(1);
    }
    return NULL;
}

/* A forked child has none of the parent's threads (syncsim runs some jobs in child processes). */
static void after_fork_child(void) {
    pthread_mutex_init(&pool.use, NULL);
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.started = 0;
    pool.parts = pool.next = 0;
    pool.pending = 0;
    pool.watching = 0;
}

/* Starts threads until `want` run (called with pool.mu held); returns how many run. */
static int grow(int want) {
    if (!pool.atfork) pool.atfork = pthread_atfork(NULL, NULL, after_fork_child) == 0;
    if (!pool.atfork) return pool.started; /* no reset in a child: no threads at all */
    while (pool.started < want) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        const int rc = pthread_create(&t, &attr, pool_main, (void *)(uintptr_t)pool.gen);
        pthread_attr_destroy(&attr);
        if (rc != 0) break;
        pool.started++;
    }
    return pool.started;
}

int cpu_par_threads(void) {
    int t = openblas_get_num_threads();
    return t < 1 ? 1 : t > CPU_PAR_MAX ? CPU_PAR_MAX : t;
}

void cpu_par_for(int threads, size_t n, size_t grain, size_t align, cpu_par_fn fn, void *ctx) {
    if (threads <= 0) threads = cpu_par_threads();
    if (threads > CPU_PAR_MAX) threads = CPU_PAR_MAX;
    if (grain < 1) grain = 1;
    if (align < 1) align = 1;
    const size_t units = (n + align - 1) / align; /* parts start at multiples of align */
    size_t parts = n / grain;
    if (parts > (size_t)threads) parts = (size_t)threads;
    if (parts > units) parts = units;
    if (parts < 2) {
        if (n) fn(ctx, 0, n);
        return;
    }
    par_part part[CPU_PAR_MAX];
    for (size_t t = 0; t < parts; t++) {
        size_t i0 = units * t / parts * align, i1 = units * (t + 1) / parts * align;
        part[t] = (par_part){i0 < n ? i0 : n, i1 < n ? i1 : n};
    }
    if (pthread_mutex_trylock(&pool.use) != 0) { /* the pool is busy: this thread alone */
        for (size_t t = 0; t < parts; t++)
            fn(ctx, part[t].i0, part[t].i1);
        return;
    }
    pthread_mutex_lock(&pool.mu);
    const int helpers = grow((int)parts - 1);
    pool.fn = fn;
    pool.ctx = ctx;
    for (size_t t = 0; t < parts; t++)
        pool.part[t] = part[t];
    pool.parts = (int)parts;
    pool.next = 0;
    __atomic_store_n(&pool.pending, (unsigned long)parts, __ATOMIC_RELAXED);
    __atomic_add_fetch(&pool.gen, 1, __ATOMIC_RELEASE);
    if (helpers) pthread_cond_broadcast(&pool.wake);
    take_parts(0); /* the caller takes parts too: those no thread has woken for yet */
    if (pool.pending > 0) {
        pthread_mutex_unlock(&pool.mu);
        watch(&pool.pending, 0, 0);
        pthread_mutex_lock(&pool.mu);
    }
    while (pool.pending > 0)
        pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&pool.use);
}
