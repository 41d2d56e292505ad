/* The CPU backend's passes split over threads (cpu_par.h). The threads are started on the first
 * split pass and then wait for the next one: starting and joining a thread for each pass cost
 * 48-50 us on the 2-core machine the kernels are benchmarked on, as much as a batch norm's pass
 * over 3 MB takes, and a training step makes about a hundred such passes. */
#include "kernels/cpu_par.h"

#include <cblas.h>
#include <pthread.h>
#include <stdint.h>

enum { CPU_PAR_MAX = 64 };

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
    int started; /* threads running in this process */
    unsigned long gen;
    cpu_par_fn fn;
    void *ctx;
    par_part part[CPU_PAR_MAX];
    int parts, next, pending;
    int atfork;
} pool = {.use = PTHREAD_MUTEX_INITIALIZER,
          .mu = PTHREAD_MUTEX_INITIALIZER,
          .wake = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER};

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
        pool.pending--;
        if (mine && pool.pending == 0) pthread_cond_signal(&pool.done);
    }
}

/* arg: the generation before the pass that started the thread, so that it takes part in it */
static void *pool_main(void *arg) {
    unsigned long seen = (unsigned long)(uintptr_t)arg;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
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
    pool.parts = pool.next = pool.pending = 0;
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
    pool.pending = (int)parts;
    pool.gen++;
    if (helpers) pthread_cond_broadcast(&pool.wake);
    take_parts(0); /* the caller takes parts too: those no thread has woken for yet */
    while (pool.pending > 0)
        pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&pool.use);
}
