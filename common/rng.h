/* Deterministic pseudo-random numbers: xoshiro256** seeded through splitmix64.
 *
 * Every random choice in syncsim draws from an rng seeded explicitly from the run's seed and a
 * stream number (worker rank, purpose), so that the same seed gives the same run bit for bit on
 * any machine:
 *     rng r; rng_seed(&r, seed, RNG_STREAM_INIT);   then rng_uniform(&r), rng_below(&r, n)...
 */
#ifndef SS_COMMON_RNG_H
#define SS_COMMON_RNG_H

#include <stdint.h>
#include <stddef.h>

typedef struct rng {
    uint64_t s[4]; /* xoshiro256** state; never all zero */
} rng;

/* Stream numbers that keep independent uses of one seed apart. Add a worker rank to a base. */
enum rng_stream {
    RNG_STREAM_INIT = 1,          /* model parameter initialization */
    RNG_STREAM_DATA = 2,          /* synthetic data generation */
    RNG_STREAM_PARTITION = 3,     /* partitioning the data set over workers */
    RNG_STREAM_SHUFFLE = 1 << 20, /* + worker: the worker's mini-batch order */
    RNG_STREAM_POLICY = 2 << 20,  /* + purpose: policy decisions shared by all workers */
    RNG_STREAM_NETWORK = 3 << 20  /* + purpose: stragglers, background traffic */
};

void rng_seed(rng *r, uint64_t seed, uint64_t stream);
uint64_t rng_next(rng *r);
double rng_uniform(rng *r);                     /* in [0, 1), 53 random bits */
uint64_t rng_below(rng *r, uint64_t n);         /* uniform in [0, n), unbiased; n > 0 */
double rng_normal(rng *r);                      /* standard normal (polar Box-Muller, no caching) */
void rng_shuffle(rng *r, int *items, size_t n); /* Fisher-Yates */

#endif
