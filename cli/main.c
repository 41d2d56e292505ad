#include "cli/cli.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* OpenBLAS's idle worker threads spin for 2^28 cycles (about 0.1 s) after each multi-threaded
 * call before they sleep, and on a machine whose cores the direct convolution's own threads also
 * use, that spin takes their cores: resnet:20 on 2 BLAS threads trained 528-558 samples/s, and
 * 684-731 with a spin of 2^18 cycles, which keeps the mlp's many small GEMMs as fast as before
 * (docs/PERFORMANCE.md). OpenBLAS reads OPENBLAS_THREAD_TIMEOUT (log2 of the cycles) when it
 * loads, before main, so unless the user set it, syncsim sets it and executes itself again; where
 * that fails (no /proc) it runs on with OpenBLAS's default. Only the commands that compute one
 * model on OpenBLAS's threads do so (train, whose emulated runs use one BLAS thread a replica
 * but whose single-replica runs use them all, and bench kernels), and only with more than one
 * BLAS thread: starting the process again costs about as much as starting it. */
#define SYNCSIM_BLAS_THREAD_TIMEOUT "18"

static int uses_blas_threads(int argc, char **argv) {
    if (argc < 2 || openblas_get_num_threads() < 2) return 0;
    return !strcmp(argv[1], "train") ||
           (argc > 2 && !strcmp(argv[1], "bench") && !strcmp(argv[2], "kernels"));
}

int main(int argc, char **argv) {
    if (uses_blas_threads(argc, argv) && !getenv("OPENBLAS_THREAD_TIMEOUT") &&
        setenv("OPENBLAS_THREAD_TIMEOUT", SYNCSIM_BLAS_THREAD_TIMEOUT, 1) == 0) {
        execv("/proc/self/exe", argv);
        unsetenv("OPENBLAS_THREAD_TIMEOUT"); /* not executed again: OpenBLAS has its default */
    }
    return cli_main(argc, argv);
}
