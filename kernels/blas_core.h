/* OpenBLAS's kernels for the CPU at hand. Debian's OpenBLAS is built for every x86-64 core
 * (DYNAMIC_ARCH) and picks its kernels from the CPU's family and model when it loads; a model it
 * does not know (a CPU newer than the library, or a virtual machine's "Intel Xeon Processor")
 * gets its Prescott (SSE3) kernels. On a 16-core Xeon VM with AVX-512 those ran SGEMM at
 * 18.8-33.1 GFLOP/s on one thread against a 167-177 GFLOP/s FMA peak (docs/PERFORMANCE.md,
 * "OpenBLAS's kernels on a CPU it does not know"). OPENBLAS_CORETYPE, read when the library
 * loads, overrides the choice, so syncsim sets it and runs itself again when the choice is such
 * an SSE core on a CPU with AVX2 or AVX-512. A user's own OPENBLAS_CORETYPE is always kept. */
#ifndef SS_KERNELS_BLAS_CORE_H
#define SS_KERNELS_BLAS_CORE_H

/* What the CPU can run (and its OS has enabled). */
enum {
    BLAS_CPU_AVX2_FMA = 1, /* AVX2 and FMA3 */
    BLAS_CPU_AVX512 = 2    /* AVX-512 F, CD, BW, DQ and VL, as OpenBLAS's SkylakeX kernels need */
};

/* The OPENBLAS_CORETYPE to run with when OpenBLAS chose `corename` on a CPU with `features`
 * (BLAS_CPU_*): "SkylakeX" or "Haswell" when corename is a core without AVX2 (Prescott, Core2,
 * Nehalem, Sandybridge, ...) and the CPU has AVX-512 or AVX2; NULL when the choice stands. */
const char *blas_core_better(const char *corename, unsigned features);

/* The BLAS_CPU_* features of this CPU. */
unsigned blas_core_cpu_features(void);

/* Called first in main: when OPENBLAS_CORETYPE is unset and blas_core_better has a better core
 * for this CPU than OpenBLAS's choice, sets it and executes the program again with the same
 * arguments (on failure it goes on with OpenBLAS's choice). In the program run again it prints
 * one note on stderr saying which cores and why. SYNCSIM_BLAS_CORE=keep turns this off. */
void blas_core_reexec(char **argv);

#endif
