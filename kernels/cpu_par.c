/* The CPU backend's passes split over threads (cpu_par.h). */
#include "kernels/cpu_par.h"

#include <cblas.h>
#include <pthread.h>

enum { CPU_PAR_MAX = 64 };

typedef struct par_part {
    cpu_par_fn fn;
    void *ctx;
    size_t i0, i1;
} par_part;

static void *part_main(void *arg) {
    const par_part *p = arg;
    p->fn(p->ctx, p->i0, p->i1);
    return NULL;
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
    pthread_t tid[CPU_PAR_MAX];
    int started[CPU_PAR_MAX] = {0};
    for (size_t t = 0; t < parts; t++) {
        size_t i0 = units * t / parts * align, i1 = units * (t + 1) / parts * align;
        part[t] = (par_part){fn, ctx, i0 < n ? i0 : n, i1 < n ? i1 : n};
    }
    for (size_t t = 1; t < parts; t++)
        started[t] = pthread_create(&tid[t], NULL, part_main, &part[t]) == 0;
    part_main(&part[0]);
    for (size_t t = 1; t < parts; t++) { /* a thread that could not start: its part runs here */
        if (started[t])
            pthread_join(tid[t], NULL);
        else
            part_main(&part[t]);
    }
}
