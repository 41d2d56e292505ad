/* Internal: the dropout mask, a counter-based hash of (seed, element), so that the CPU and the
 * CUDA backend draw the same mask without sharing a generator's state, and the backward pass
 * draws it again instead of storing it (splitmix64's finalizer: Steele et al. 2014). */
#ifndef SS_KERNELS_DROPOUT_HASH_H
#define SS_KERNELS_DROPOUT_HASH_H

#include <stdint.h>

#ifdef __CUDACC__
#define SS_HOST_DEVICE __host__ __device__
#else
#define SS_HOST_DEVICE
#endif

static inline SS_HOST_DEVICE uint64_t dropout_mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* 24 random bits of element i under seed, as a number in [0, 2^24). */
static inline SS_HOST_DEVICE uint32_t dropout_draw(uint64_t seed, uint64_t i) {
    return (uint32_t)(dropout_mix64(seed ^ dropout_mix64(i)) >> 40);
}

/* Elements whose draw is below this are dropped: p 2^24, rounded. */
static inline SS_HOST_DEVICE uint32_t dropout_threshold(float p) {
    return (uint32_t)((double)p * 16777216.0 + 0.5);
}

#endif
