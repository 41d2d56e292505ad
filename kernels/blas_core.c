#include "kernels/blas_core.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* In the program run again: which core OpenBLAS chose at first (the note's subject). */
#define BLAS_CORE_FROM_ENV "SYNCSIM_BLAS_CORE_FROM"

const char *blas_core_better(const char *corename, unsigned features) {
    /* OpenBLAS's x86 cores without AVX2 kernels (openblas_get_corename's names) */
    static const char *const sse_cores[] = {"Katmai",     "Coppermine",   "Northwood",   "Prescott",
                                            "Banias",     "Atom",         "Core2",       "Penryn",
                                            "Dunnington", "Nehalem",      "Sandybridge", "Athlon",
                                            "Opteron",    "Opteron_SSE3", "Barcelona",   "Bobcat",
                                            "Bulldozer",  "Piledriver",   "Steamroller"};
    if (!corename) return NULL;
    int sse = 0;
    for (size_t i = 0; i < sizeof sse_cores / sizeof sse_cores[0]; i++)
        if (!strcasecmp(corename, sse_cores[i])) sse = 1;
    if (!sse) return NULL;
    if (features & BLAS_CPU_AVX512) return "SkylakeX";
    if (features & BLAS_CPU_AVX2_FMA) return "Haswell";
    return NULL;
}

unsigned blas_core_cpu_features(void) {
    unsigned f = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    /* libgcc's answers include the OS's support (XGETBV) for the YMM and ZMM state */
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) f |= BLAS_CPU_AVX2_FMA;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        f |= BLAS_CPU_AVX512;
#endif
    return f;
}

void blas_core_reexec(char **argv) {
    const char *from = getenv(BLAS_CORE_FROM_ENV);
    if (from) {
        const char *now = openblas_get_corename();
        const char *set = getenv("OPENBLAS_CORETYPE");
        if (now && set && !strcasecmp(now, set))
            fprintf(stderr,
                    "syncsim: note: OpenBLAS chose its %s kernels for this CPU (a model it does "
                    "not know); running with OPENBLAS_CORETYPE=%s, which this CPU supports "
                    "(set OPENBLAS_CORETYPE, or SYNCSIM_BLAS_CORE=keep, to choose otherwise)\n",
                    from, now);
        else
            fprintf(stderr,
                    "syncsim: note: OpenBLAS chose its %s kernels for this CPU and ignored "
                    "OPENBLAS_CORETYPE=%s (a build for one core only?); it runs %s\n",
                    from, set ? set : "", now ? now : "?");
        unsetenv(BLAS_CORE_FROM_ENV);
        return;
    }
    if (getenv("OPENBLAS_CORETYPE")) return;
    const char *keep = getenv("SYNCSIM_BLAS_CORE");
    if (keep && !strcmp(keep, "keep")) return;
    const char *chosen = openblas_get_corename();
    const char *better = blas_core_better(chosen, blas_core_cpu_features());
    if (!better) return;
    if (setenv("OPENBLAS_CORETYPE", better, 1) != 0 || setenv(BLAS_CORE_FROM_ENV, chosen, 1) != 0)
        return;
    fflush(NULL);
    execv("/proc/self/exe", argv);
    /* not run again (no /proc?): go on with OpenBLAS's choice */
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv(BLAS_CORE_FROM_ENV);
}
