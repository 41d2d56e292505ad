/* Batch normalization per column of (rows, cols) (NHWC: rows = B*H*W, cols = C). The statistics
 * kernels give a block to a column: its threads take rows t, t + blockDim, ... and add them in
 * double, then a tree in shared memory, so the sums have a fixed order (no atomics) and the
 * results do not depend on scheduling. */
#include "kernels/cuda_ops.h"

enum { BN_THREADS = 256 };

/* The sum over the block's threads of v, in a fixed tree; valid in thread 0. */
static __device__ double block_sum(double v, double *shared) {
    shared[threadIdx.x] = v;
    __syncthreads();
    for (int half = BN_THREADS / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half) shared[threadIdx.x] += shared[threadIdx.x + half];
        __syncthreads();
    }
    double s = shared[0];
    __syncthreads();
    return s;
}

static __global__ void bn_stats_kernel(int rows, int cols, const float *x, float momentum,
                                       float eps, float *run_mean, float *run_var, float *save_mean,
                                       float *save_invstd) {
    __shared__ double shared[BN_THREADS];
    const int c = blockIdx.x;
    double acc = 0.0;
    for (int r = threadIdx.x; r < rows; r += BN_THREADS)
        acc += x[(size_t)r * cols + c];
    const float mean = (float)(block_sum(acc, shared) / rows);
    acc = 0.0;
    for (int r = threadIdx.x; r < rows; r += BN_THREADS) {
        double d = (double)x[(size_t)r * cols + c] - mean;
        acc += d * d;
    }
    const double var = block_sum(acc, shared) / rows;
    if (threadIdx.x == 0) {
        save_mean[c] = mean;
        save_invstd[c] = (float)(1.0 / sqrt(var + eps));
        double unbiased = rows > 1 ? var * rows / (rows - 1) : var;
        run_mean[c] = (float)((1.0 - momentum) * run_mean[c] + momentum * (double)mean);
        run_var[c] = (float)((1.0 - momentum) * run_var[c] + momentum * unbiased);
    }
}

/* y = x scale + shift with scale = gamma invstd, shift = beta - mean scale, as the CPU forms
 * them in float */
static __global__ void bn_apply_kernel(size_t n, int cols, const float *x, const float *gamma,
                                       const float *beta, const float *mean, const float *invstd,
                                       int from_var, float eps, float *y) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        int c = (int)(i % cols);
        float is = from_var ? (float)(1.0 / sqrt((double)invstd[c] + eps)) : invstd[c];
        float scale = __fmul_rn(gamma[c], is);
        float shift = __fsub_rn(beta[c], __fmul_rn(mean[c], scale));
        y[i] = __fadd_rn(__fmul_rn(x[i], scale), shift);
    }
}

static __global__ void bn_grad_stats_kernel(int rows, int cols, const float *x, const float *dy,
                                            const float *save_mean, const float *save_invstd,
                                            float *dgamma, float *dbeta) {
    __shared__ double shared[BN_THREADS];
    const int c = blockIdx.x;
    double sdy = 0.0, sdyx = 0.0;
    for (int r = threadIdx.x; r < rows; r += BN_THREADS) {
        size_t i = (size_t)r * cols + c;
        double xhat = ((double)x[i] - save_mean[c]) * save_invstd[c];
        sdy += dy[i];
        sdyx += dy[i] * xhat;
    }
    sdy = block_sum(sdy, shared);
    sdyx = block_sum(sdyx, shared);
    if (threadIdx.x == 0) {
        dgamma[c] = (float)sdyx;
        dbeta[c] = (float)sdy;
    }
}

/* dx = gamma invstd (dy - sum_dy / rows - xhat sum_dyxhat / rows); the sums are dbeta, dgamma
 * as doubles rounded to float, as on the CPU up to that rounding */
static __global__ void bn_dx_kernel(size_t n, int rows, int cols, const float *x, const float *dy,
                                    const float *gamma, const float *save_mean,
                                    const float *save_invstd, const float *dgamma,
                                    const float *dbeta, float *dx) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        int c = (int)(i % cols);
        float k = __fmul_rn(gamma[c], save_invstd[c]);
        float a = (float)((double)dbeta[c] / rows), b = (float)((double)dgamma[c] / rows);
        float xhat = __fmul_rn(__fsub_rn(x[i], save_mean[c]), save_invstd[c]);
        dx[i] = __fmul_rn(k, __fsub_rn(__fsub_rn(dy[i], a), __fmul_rn(xhat, b)));
    }
}

void cuda_bn_fwd_train(cudaStream_t stream, int rows, int cols, const float *x, const float *gamma,
                       const float *beta, float momentum, float eps, float *run_mean,
                       float *run_var, float *save_mean, float *save_invstd, float *y) {
    bn_stats_kernel<<<cols, BN_THREADS, 0, stream>>>(rows, cols, x, momentum, eps, run_mean,
                                                     run_var, save_mean, save_invstd);
    cudaCheck(cudaGetLastError());
    size_t n = (size_t)rows * cols;
    bn_apply_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n, cols, x, gamma, beta, save_mean,
                                                             save_invstd, 0, eps, y);
    cudaCheck(cudaGetLastError());
}

void cuda_bn_fwd_infer(cudaStream_t stream, int rows, int cols, const float *x, const float *gamma,
                       const float *beta, const float *run_mean, const float *run_var, float eps,
                       float *y) {
    size_t n = (size_t)rows * cols;
    bn_apply_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n, cols, x, gamma, beta, run_mean,
                                                             run_var, 1, eps, y);
    cudaCheck(cudaGetLastError());
}

void cuda_bn_bwd(cudaStream_t stream, int rows, int cols, const float *x, const float *dy,
                 const float *gamma, const float *save_mean, const float *save_invstd,
                 float *dgamma, float *dbeta, float *dx) {
    bn_grad_stats_kernel<<<cols, BN_THREADS, 0, stream>>>(rows, cols, x, dy, save_mean, save_invstd,
                                                          dgamma, dbeta);
    cudaCheck(cudaGetLastError());
    if (!dx) return;
    size_t n = (size_t)rows * cols;
    bn_dx_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n, rows, cols, x, dy, gamma, save_mean,
                                                          save_invstd, dgamma, dbeta, dx);
    cudaCheck(cudaGetLastError());
}
