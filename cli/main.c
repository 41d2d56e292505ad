#include "cli/cli.h"
#include "kernels/blas_core.h"

int main(int argc, char **argv) {
    blas_core_reexec(argv); /* OpenBLAS's AVX2 or AVX-512 kernels where it did not know the CPU */
    return cli_main(argc, argv);
}
