/* The causal softmax of attention scores and its backward pass (the GEMMs around it are
 * cuBLAS's strided batched ones): a warp a row; the sums are in double, over the warp's lanes
 * then a fixed shuffle tree. */
#include "kernels/cuda_ops.h"

enum { ATT_WARPS = 8 };

static __device__ double warp_sum(double v) {
    for (int o = 16; o > 0; o /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

static __device__ float warp_max(float v) {
    for (int o = 16; o > 0; o /= 2)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

static __global__ void attn_softmax_fwd_kernel(int rows, int t, const float *x, float *y) {
    const int r = blockIdx.x * ATT_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;
    const float *xr = x + (size_t)r * t;
    float *yr = y + (size_t)r * t;
    const int q = r % t;
    float mx = -INFINITY;
    for (int j = lane; j <= q; j += 32)
        mx = fmaxf(mx, xr[j]);
    mx = warp_max(mx);
    double s = 0.0;
    for (int j = lane; j <= q; j += 32)
        s += exp((double)__fsub_rn(xr[j], mx));
    const float inv = (float)(1.0 / warp_sum(s));
    for (int j = lane; j < t; j += 32)
        yr[j] = j <= q ? __fmul_rn(expf(__fsub_rn(xr[j], mx)), inv) : 0.0f;
}

static __global__ void attn_softmax_bwd_kernel(int rows, int t, const float *y, const float *dy,
                                               float *dx) {
    const int r = blockIdx.x * ATT_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;
    const float *yr = y + (size_t)r * t, *gr = dy + (size_t)r * t;
    float *dr = dx + (size_t)r * t;
    const int q = r % t;
    double s = 0.0;
    for (int j = lane; j <= q; j += 32)
        s += (double)yr[j] * gr[j];
    const float sf = (float)warp_sum(s);
    for (int j = lane; j < t; j += 32)
        dr[j] = j <= q ? __fmul_rn(yr[j], __fsub_rn(gr[j], sf)) : 0.0f;
}

void cuda_attn_softmax_fwd(cudaStream_t stream, int rows, int t, const float *x, float *y) {
    attn_softmax_fwd_kernel<<<(rows + ATT_WARPS - 1) / ATT_WARPS, 32 * ATT_WARPS, 0, stream>>>(
        rows, t, x, y);
    cudaCheck(cudaGetLastError());
}

void cuda_attn_softmax_bwd(cudaStream_t stream, int rows, int t, const float *y, const float *dy,
                           float *dx) {
    attn_softmax_bwd_kernel<<<(rows + ATT_WARPS - 1) / ATT_WARPS, 32 * ATT_WARPS, 0, stream>>>(
        rows, t, y, dy, dx);
    cudaCheck(cudaGetLastError());
}
