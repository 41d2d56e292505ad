/* Internal: cuBLAS, loaded when the first CUDA device opens (dlopen of libcublas.so.<major>)
 * rather than linked: cuBLAS and cuBLASLt are over 500 MB of shared objects whose relocations
 * took about 0.11 s of every process start (27,000 page faults), GPU or none, `syncsim --help`
 * included. The table holds the functions device_cuda.c calls, typed by cuBLAS's own
 * declarations. */
#ifndef SS_KERNELS_CUDA_BLAS_H
#define SS_KERNELS_CUDA_BLAS_H

#include <cublas_v2.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cuda_blas_api {
    __typeof__(&cublasCreate_v2) create;
    __typeof__(&cublasDestroy_v2) destroy;
    __typeof__(&cublasSetStream_v2) set_stream;
    __typeof__(&cublasSgemm_v2) sgemm;
    __typeof__(&cublasSgemmStridedBatched) sgemm_strided_batched;
    __typeof__(&cublasGetStatusString) status_string;
} cuda_blas_api;

/* The table, loaded once (any thread); NULL with the reason (the library or the symbol that was
 * not found) when cuBLAS cannot be loaded. */
const cuda_blas_api *cuda_blas(char *reason, size_t reason_size);
/* cublasGetStatusString's message, or the status as a number when cuBLAS is not loaded. */
const char *cuda_blas_status(cublasStatus_t st);

#ifdef __cplusplus
}
#endif

#endif
