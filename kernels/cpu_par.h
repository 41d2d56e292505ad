/* The CPU backend's passes split over threads: [0, n) in contiguous parts, one a thread
 * (pthreads), as many threads as OpenBLAS is set to use (1 in every emulated run, whose replicas
 * run side by side on the engine's threads instead). A part computes its items exactly as the
 * whole loop would, so a pass whose every output depends on its own item only (element-wise
 * passes, rows of a softmax, columns of a sum over rows) gives the same bits on any number of
 * threads. Passes that add across items keep one thread. */
#ifndef SS_KERNELS_CPU_PAR_H
#define SS_KERNELS_CPU_PAR_H

#include <stddef.h>

/* items [i0, i1) of the pass described by ctx */
typedef void (*cpu_par_fn)(void *ctx, size_t i0, size_t i1);

/* The items a part takes at least: below 2 x this, the caller's thread does the whole pass
 * (waking a waiting thread and waiting for its part costs about as much as a pass over 2^15
 * floats in cache). */
enum { CPU_PAR_GRAIN = 1 << 16 };

/* The items a part takes at least when an item is `per_item` units of CPU_PAR_GRAIN's work (a
 * row of that many floats, a sample, a column over that many rows): CPU_PAR_GRAIN / per_item, at
 * least 1. */
static inline size_t cpu_par_grain(size_t per_item) {
    const size_t g = CPU_PAR_GRAIN / (per_item ? per_item : 1);
    return g ? g : 1;
}

/* Runs fn over [0, n) in up to `threads` parts of at least `grain` items whose bounds are
 * multiples of `align` (rows of a matrix, 16 floats to keep the parts' stores off one another's
 * cache lines); the caller takes part 0 and any part no thread has taken yet. threads <= 0: the
 * count OpenBLAS uses. Called from within a part (or while another thread of the process splits
 * a pass), it runs its parts in its own thread. */
void cpu_par_for(int threads, size_t n, size_t grain, size_t align, cpu_par_fn fn, void *ctx);

/* Tells the pool's threads that watch for the next pass to sleep now: called before each call
 * into OpenBLAS, whose own threads need the cores. On a 16-core host gpt:wlm's step, mostly
 * SGEMMs, ran 11-18 % slower on 16 threads once the pool's threads watched after each pass. */
void cpu_par_quiet(void);

/* For tests: the threads watching now, and how long a watch lasts (ns; negative: the default,
 * 100 us). */
int cpu_par_watching(void);
void cpu_par_set_watch_ns(long long ns);

/* the threads cpu_par_for takes for threads <= 0 */
int cpu_par_threads(void);

#endif
