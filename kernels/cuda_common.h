/* Internal: CUDA helpers shared by device_cuda.c and the cuda_<op>.cu kernels.
 *
 * cudaCheck / cublasCheck wrap a runtime or cuBLAS call and abort with the failing call, its
 * file:line and the CUDA message (a device failure in the middle of training is not
 * recoverable; llm.c's cudaCheck). Every launcher checks cudaGetLastError after its launch. */
#ifndef SS_KERNELS_CUDA_COMMON_H
#define SS_KERNELS_CUDA_COMMON_H

#include <cublas_v2.h>
#include <stddef.h>
#include <cuda_runtime_api.h>

#include "kernels/cuda_blas.h"

#ifdef __cplusplus
extern "C" {
#endif

void cuda_fail(const char *message, const char *call, const char *file, int line)
    __attribute__((noreturn));

#ifdef __cplusplus
}
#endif

#define cudaCheck(call)                                                                            \
    do {                                                                                           \
        cudaError_t cuda_err_ = (call);                                                            \
        if (cuda_err_ != cudaSuccess)                                                              \
            cuda_fail(cudaGetErrorString(cuda_err_), #call, __FILE__, __LINE__);                   \
    } while (0)

#define cublasCheck(call)                                                                          \
    do {                                                                                           \
        cublasStatus_t cublas_st_ = (call);                                                        \
        if (cublas_st_ != CUBLAS_STATUS_SUCCESS)                                                   \
            cuda_fail(cuda_blas_status(cublas_st_), #call, __FILE__, __LINE__);                    \
    } while (0)

/* Threads per block of the elementwise kernels, and the grid of a grid-stride loop over n. */
#define CUDA_BLOCK 256
/* Blocks of a grid-stride loop over n elements (capped: each thread then takes several). */
static inline unsigned cuda_grid(size_t n) {
    size_t blocks = (n + CUDA_BLOCK - 1) / CUDA_BLOCK;
    return (unsigned)(blocks < 65535 ? (blocks ? blocks : 1) : 65535);
}
/* Whether a grid-stride loop over n elements (cuda_grid) may count in 32 bits: n and every index
 * it steps to stay below 2^31 */
static inline int cuda_index32(size_t n) {
    return n < ((size_t)1 << 31) - (size_t)65535 * CUDA_BLOCK;
}

#endif
