/* The CUDA runtime as test_cuda_emulated sees it: CUDA kernel sources compiled as C++ and run on
 * CPU threads (tests/emulate_cuda.cmake rewrites each launch into ss_emu_launch). This header
 * stands in for kernels/cuda_common.h on that test's include path, ahead of the real one.
 *
 * A launch runs its blocks one after another, each on as many threads as the block has, which
 * wait for each other at __syncthreads (a barrier) as a block's threads do; __shared__ arrays
 * are static, so the threads of a block share them. What this checks is the kernels' arithmetic
 * and indexing, with every thread of a block live at once; not the GPU's memory model, its
 * timing or its warps. */
#ifndef SS_KERNELS_CUDA_COMMON_H
#define SS_KERNELS_CUDA_COMMON_H

#include <math.h>
#include <stddef.h>

/* what kernels/cuda_ops.h needs, for the C test that includes it too */
typedef int cudaStream_t;

#ifdef __cplusplus
#include <functional>

struct float4 {
    float x, y, z, w;
};
static inline float4 make_float4(float x, float y, float z, float w) {
    return {x, y, z, w};
}
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 {
    unsigned x, y, z;
};
extern thread_local uint3 threadIdx;
extern uint3 blockIdx;
extern dim3 blockDim, gridDim;

typedef int cudaError_t;
enum { cudaSuccess = 0, cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
static inline cudaError_t cudaGetLastError(void) {
    return cudaSuccess;
}
template <typename F> static inline cudaError_t cudaFuncSetAttribute(F, int, int) {
    return cudaSuccess;
}
#define cudaCheck(call) ((void)(call))

#define __global__
#define __device__
#define __host__
#define __restrict__
#define __launch_bounds__(...)
#define __shared__   static
#define __align__(n) __attribute__((aligned(n)))
/* dynamic shared memory (extern __shared__ T name[], rewritten): this many bytes */
#define SS_EMU_DYNAMIC_SHARED (64 * 1024)

/* the rounded arithmetic intrinsics: IEEE single precision, one rounding each (the test is built
 * without contraction into fused multiply-adds) */
static inline float __fadd_rn(float a, float b) {
    return a + b;
}
static inline float __fsub_rn(float a, float b) {
    return a - b;
}
static inline float __fmul_rn(float a, float b) {
    return a * b;
}

/* the barrier of the block being run */
void ss_emu_syncthreads(void);
#define __syncthreads() ss_emu_syncthreads()

/* runs `body` (the kernel call) for every block of `grid`, on `threads` threads a block; the
 * stream is the launch's, unused */
void ss_emu_launch(dim3 grid, unsigned threads, cudaStream_t stream,
                   const std::function<void()> &body);

#endif /* __cplusplus */

#define CUDA_BLOCK 256
static inline unsigned cuda_grid(size_t n) {
    size_t blocks = (n + CUDA_BLOCK - 1) / CUDA_BLOCK;
    return (unsigned)(blocks < 65535 ? (blocks ? blocks : 1) : 65535);
}

#endif
