/* The CUDA helpers of cuda_common.h that are functions. */
#include "kernels/cuda_common.h"

#include <stdio.h>
#include <stdlib.h>

void cuda_fail(const char *message, const char *call, const char *file, int line) {
    fprintf(stderr, "syncsim: CUDA error at %s:%d: %s: %s\n", file, line, call, message);
    abort();
}
