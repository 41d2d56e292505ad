/* What the CPU backend's element-wise loops share: their compilation for several instruction
 * sets, and an exponential that vectorizes. */
#ifndef SS_KERNELS_CPU_VEC_H
#define SS_KERNELS_CPU_VEC_H

#include <stdint.h>
#include <string.h>

/* Runtime dispatch of the element-wise loops: GCC compiles each marked function for plain x86-64
 * (SSE2), AVX2 and AVX-512 and the loader picks the widest the CPU has (ifunc), so the default
 * build runs on any x86-64 and still uses the wide vectors. The loops reassociate no sum and the
 * build keeps -ffp-contract=off (ISO C), so every variant computes the same bits. A native build
 * (-DSYNCSIM_NATIVE=ON: -march=native) needs no dispatch. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(SS_NATIVE_BUILD) && !defined(__AVX512F__)
#define SS_CPU_CLONES __attribute__((target_clones("default", "avx2", "avx512f")))
#else
#define SS_CPU_CLONES
#endif
/* Helpers that must be compiled inside each variant of their caller. */
#define SS_INLINE static inline __attribute__((always_inline))
/* Before a loop whose stores may alias its loads element for element only (out[i] = f(in[i]),
 * out == in allowed): GCC vectorizes it without a check for overlap. (Only the fuzzing build
 * uses clang, whose kernels run no such loop.) */
#if defined(__GNUC__) && !defined(__clang__)
#define SS_IVDEP _Pragma("GCC ivdep")
#else
#define SS_IVDEP
#endif

/* e^x for x <= 0 (a softmax's terms, shifted by their maximum), in single precision without a
 * library call, so that a loop of them vectorizes. x = n ln 2 + r with n = round(x / ln 2) and
 * |r| <= ln(2) / 2 (ln 2 in two parts, 0.693359375 exact in 9 bits, so that n ln2_hi is exact);
 * e^r by its Taylor polynomial of degree 7 (the first omitted term, r^8 / 8!, is below 5.2e-9);
 * 2^n put in the exponent's bits. Within 1.19 units in the last place of e^x on [-87, 0] (every
 * 2^-12: tests/test_kernels_gpt.c), and exactly 1 at x = 0.
 * Arguments below -87 (e^x under 1.7e-38, the smallest normal float being 1.18e-38) give
 * e^-87. */
SS_INLINE float ss_expf_neg(float x) {
    const float log2e = 1.44269504f, ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    const float round_magic = 12582912.0f; /* 1.5 x 2^23: adding it rounds to an integer */
    x = x > -87.0f ? x : -87.0f;
    const float n = (x * log2e + round_magic) - round_magic;
    const float r = (x - n * ln2_hi) - n * ln2_lo;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

#endif
