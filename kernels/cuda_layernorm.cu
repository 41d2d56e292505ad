/* Layer normalization over the last dimension (device_impl.h's ln_fwd, ln_bwd). A block takes a
 * row (statistics, dx) or a column (dgamma, dbeta); its threads add in double with a fixed
 * stride and a fixed tree, so the results do not depend on scheduling. */
#include "kernels/cuda_ops.h"

enum { LN_THREADS = 256 };

static __device__ double ln_block_sum(double v, double *shared) {
    shared[threadIdx.x] = v;
    __syncthreads();
    for (int half = LN_THREADS / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half) shared[threadIdx.x] += shared[threadIdx.x + half];
        __syncthreads();
    }
    double s = shared[0];
    __syncthreads();
    return s;
}

static __global__ void ln_fwd_kernel(int cols, const float *x, const float *gamma,
                                     const float *beta, float eps, float *mean, float *rstd,
                                     float *y) {
    __shared__ double shared[LN_THREADS];
    const size_t r = blockIdx.x;
    const float *xr = x + r * cols;
    double s = 0.0;
    for (int c = threadIdx.x; c < cols; c += LN_THREADS)
        s += xr[c];
    const float mu = (float)(ln_block_sum(s, shared) / cols);
    double v = 0.0;
    for (int c = threadIdx.x; c < cols; c += LN_THREADS) {
        double d = (double)xr[c] - mu;
        v += d * d;
    }
    const float rs = (float)(1.0 / sqrt(ln_block_sum(v, shared) / cols + eps));
    if (threadIdx.x == 0) mean[r] = mu, rstd[r] = rs;
    for (int c = threadIdx.x; c < cols; c += LN_THREADS)
        y[r * cols + c] =
            __fadd_rn(__fmul_rn(__fmul_rn(__fsub_rn(xr[c], mu), rs), gamma[c]), beta[c]);
}

static __global__ void ln_dx_kernel(int cols, const float *x, const float *dy, const float *gamma,
                                    const float *mean, const float *rstd, float *dx) {
    __shared__ double shared[LN_THREADS];
    const size_t r = blockIdx.x;
    const float *xr = x + r * cols, *gr = dy + r * cols;
    const float mu = mean[r], rs = rstd[r];
    double sg = 0.0, sgx = 0.0;
    for (int c = threadIdx.x; c < cols; c += LN_THREADS) {
        float xhat = __fmul_rn(__fsub_rn(xr[c], mu), rs);
        double g = (double)gr[c] * gamma[c];
        sg += g;
        sgx += g * xhat;
    }
    const float a = (float)(ln_block_sum(sg, shared) / cols);
    const float b = (float)(ln_block_sum(sgx, shared) / cols);
    for (int c = threadIdx.x; c < cols; c += LN_THREADS) {
        float xhat = __fmul_rn(__fsub_rn(xr[c], mu), rs);
        float g = __fmul_rn(gr[c], gamma[c]);
        dx[r * cols + c] = __fmul_rn(rs, __fsub_rn(__fsub_rn(g, a), __fmul_rn(xhat, b)));
    }
}

static __global__ void ln_dparams_kernel(int rows, int cols, const float *x, const float *dy,
                                         const float *mean, const float *rstd, float *dgamma,
                                         float *dbeta) {
    __shared__ double shared[LN_THREADS];
    const int c = blockIdx.x;
    double sw = 0.0, sb = 0.0;
    for (int r = threadIdx.x; r < rows; r += LN_THREADS) {
        size_t i = (size_t)r * cols + c;
        float xhat = __fmul_rn(__fsub_rn(x[i], mean[r]), rstd[r]);
        sw += (double)dy[i] * xhat;
        sb += dy[i];
    }
    sw = ln_block_sum(sw, shared);
    sb = ln_block_sum(sb, shared);
    if (threadIdx.x == 0) dgamma[c] = (float)sw, dbeta[c] = (float)sb;
}

void cuda_ln_fwd(cudaStream_t stream, int rows, int cols, const float *x, const float *gamma,
                 const float *beta, float eps, float *mean, float *rstd, float *y) {
    ln_fwd_kernel<<<rows, LN_THREADS, 0, stream>>>(cols, x, gamma, beta, eps, mean, rstd, y);
    cudaCheck(cudaGetLastError());
}

void cuda_ln_bwd(cudaStream_t stream, int rows, int cols, const float *x, const float *dy,
                 const float *gamma, const float *mean, const float *rstd, float *dgamma,
                 float *dbeta, float *dx) {
    ln_dparams_kernel<<<cols, LN_THREADS, 0, stream>>>(rows, cols, x, dy, mean, rstd, dgamma,
                                                       dbeta);
    cudaCheck(cudaGetLastError());
    ln_dx_kernel<<<rows, LN_THREADS, 0, stream>>>(cols, x, dy, gamma, mean, rstd, dx);
    cudaCheck(cudaGetLastError());
}
