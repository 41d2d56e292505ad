/* Convolutions of few input channels (a network's first layer: 1 channel for Fashion-MNIST, 3 for
 * CIFAR) on NHWC tensors: the forward pass and the weight gradient, without im2col columns.
 *
 * As a GEMM such a layer has K = kh * kw * in_c of 9 to 75 (the cnn's conv1: 25) against P =
 * B * out_h * out_w of hundreds of thousands of output pixels: im2col writes and SGEMM reads a
 * column matrix K floats wide for 2 K flops a pixel and channel, and the tiled kernels
 * (cuda_conv_tiled.cu) need in_c % 8 == 0. Here a block stages the whole kernel (K x oc floats) in
 * shared memory once, and the input patches of its pixels (K floats each) stage by stage:
 *
 * - forward: a thread computes 4 output channels of one pixel, a chain of K fused multiply-adds
 *   each, and writes them as one float4 (the threads of a pixel write its oc channels together);
 * - weight gradient dw (oc, K) = dy^T (oc, P) col (P, K): a thread sums 4 channels by one column
 *   k over a slice of pixels, 32 at a time, in order; the slices' partial sums are then added in
 *   order (cuda_conv_dw_sum), so the result does not depend on scheduling.
 *
 * The input gradient (a first layer needs none) stays with col2im.
 *
 * Staging computes each patch element's pixel and tap with integer divisions: on an H200 the
 * forward pass of the cnn's conv1 (32 channels) took 0.108 ms against 0.096 on im2col + SGEMM,
 * the staging outweighing 32 channels of products, while 16 channels and the weight gradient
 * were faster (kernels/device_cuda.c says which passes take these kernels by default). Staging
 * each pixel's patch by one thread, its divisions done once, is the next step. */
#include "kernels/cuda_ops.h"

enum {
    FEW_THREADS = 256, /* a block */
    FEW_MAX_C = 4,     /* input channels */
    FEW_MAX_K = 75,    /* kh * kw * in_c: 5 x 5 x 3 */
    FEW_MIN_OC = 16,   /* output channels, a multiple of 4: at most 64 pixels a block */
    FEW_MAX_OC = 64,
    FEW_DW_PX = 32,     /* weight gradient: pixels a stage */
    FEW_DW_WARPS = 2048 /* weight gradient: the warps its slices of pixels aim at */
};

/* x[p's input pixel under column k] or 0 in the padding; k = (ki * kw + kj) * in_c + c */
static __device__ float patch_at(const conv_geom &g, const float *__restrict__ x, int b, int oh,
                                 int ow, int k) {
    const int st = g.stride > 1 ? g.stride : 1;
    const int tap = k / g.in_c, c = k - tap * g.in_c, ki = tap / g.kw, kj = tap - ki * g.kw;
    const int ih = oh * st - g.pad + ki, iw = ow * st - g.pad + kj;
    if ((unsigned)ih >= (unsigned)g.in_h || (unsigned)iw >= (unsigned)g.in_w) return 0.0f;
    return x[(((size_t)b * g.in_h + ih) * g.in_w + iw) * g.in_c + c];
}

/* y (P, oc) = col (P, K) w^T (K, oc): oc / 4 threads a pixel, FEW_THREADS / (oc / 4) pixels a
 * block. Shared: the kernel transposed (K x oc) and the block's patches (pixels x K). */
static __global__ void __launch_bounds__(FEW_THREADS)
    conv_few_fwd_kernel(conv_geom g, int oc, const float *__restrict__ x,
                        const float *__restrict__ w, float *__restrict__ y) {
    __shared__ __align__(16) float ws[FEW_MAX_K * FEW_MAX_OC];
    __shared__ float xs[FEW_THREADS / (FEW_MIN_OC / 4) * FEW_MAX_K];
    const int tid = threadIdx.x, k_total = g.kh * g.kw * g.in_c, tq = oc / 4;
    const int per_block = FEW_THREADS / tq, pixels = g.batch * g.out_h * g.out_w;
    const int p0 = blockIdx.x * per_block;
    for (int i = tid; i < k_total * oc; i += FEW_THREADS) {
        const int o = i / k_total, k = i - o * k_total; /* w is (oc, K): read in order */
        ws[k * oc + o] = w[i];
    }
    for (int i = tid; i < per_block * k_total; i += FEW_THREADS) {
        const int pl = i / k_total, k = i - pl * k_total, p = p0 + pl;
        float v = 0.0f;
        if (p < pixels) {
            const int ow = p % g.out_w, oh = (p / g.out_w) % g.out_h, b = p / (g.out_w * g.out_h);
            v = patch_at(g, x, b, oh, ow, k);
        }
        xs[i] = v;
    }
    __syncthreads();
    const int pl = tid / tq, q = tid - pl * tq, p = p0 + pl;
    if (pl >= per_block || p >= pixels) return;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float *xp = xs + pl * k_total;
    for (int k = 0; k < k_total; k++) {
        const float a = xp[k];
        const float4 wv = *(const float4 *)(ws + k * oc + 4 * q);
        acc.x = fmaf(a, wv.x, acc.x);
        acc.y = fmaf(a, wv.y, acc.y);
        acc.z = fmaf(a, wv.z, acc.z);
        acc.w = fmaf(a, wv.w, acc.w);
    }
    *(float4 *)(y + (size_t)p * oc + 4 * q) = acc;
}

/* The partial weight gradient of slice blockIdx.x (its pixels [slice * z, slice * (z + 1))):
 * thread i of the grid's y-th block sums outputs (4 channels from 4 * (i % (oc / 4)), column
 * i / (oc / 4)) over the slice's pixels in order. Shared: a stage's dy (FEW_DW_PX x oc) and
 * patches (FEW_DW_PX x K). */
static __global__ void __launch_bounds__(FEW_THREADS)
    conv_few_dw_kernel(conv_geom g, int oc, const float *__restrict__ x,
                       const float *__restrict__ dy, float *__restrict__ out, int slice) {
    __shared__ __align__(16) float ds[FEW_DW_PX * FEW_MAX_OC];
    __shared__ float xs[FEW_DW_PX * FEW_MAX_K];
    const int tid = threadIdx.x, k_total = g.kh * g.kw * g.in_c, tq = oc / 4;
    const int pixels = g.batch * g.out_h * g.out_w;
    const int p_begin = blockIdx.x * slice;
    const int p_end = p_begin + slice < pixels ? p_begin + slice : pixels;
    const int item = blockIdx.y * FEW_THREADS + tid, k = item / tq, q = item - k * tq;
    const int mine = k < k_total;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int s0 = p_begin; s0 < p_end; s0 += FEW_DW_PX) {
        const int n = p_end - s0 < FEW_DW_PX ? p_end - s0 : FEW_DW_PX;
        __syncthreads(); /* the previous stage's reads are done */
        for (int i = tid; i < n * tq; i += FEW_THREADS)
            ((float4 *)ds)[i] = *(const float4 *)(dy + (size_t)s0 * oc + 4 * i);
        for (int i = tid; i < n * k_total; i += FEW_THREADS) {
            const int pl = i / k_total, kk = i - pl * k_total, p = s0 + pl;
            const int ow = p % g.out_w, oh = (p / g.out_w) % g.out_h, b = p / (g.out_w * g.out_h);
            xs[i] = patch_at(g, x, b, oh, ow, kk);
        }
        __syncthreads();
        if (!mine) continue;
        for (int pl = 0; pl < n; pl++) {
            const float a = xs[pl * k_total + k];
            const float4 d = *(const float4 *)(ds + pl * oc + 4 * q);
            acc.x = fmaf(d.x, a, acc.x);
            acc.y = fmaf(d.y, a, acc.y);
            acc.z = fmaf(d.z, a, acc.z);
            acc.w = fmaf(d.w, a, acc.w);
        }
    }
    if (!mine) return;
    float *o = out + (size_t)blockIdx.x * oc * k_total;
    o[(size_t)(4 * q + 0) * k_total + k] = acc.x;
    o[(size_t)(4 * q + 1) * k_total + k] = acc.y;
    o[(size_t)(4 * q + 2) * k_total + k] = acc.z;
    o[(size_t)(4 * q + 3) * k_total + k] = acc.w;
}

static int fits_int(conv_geom g, int oc) {
    const long long in = (long long)g.batch * g.in_h * g.in_w * g.in_c;
    const long long out = (long long)g.batch * g.out_h * g.out_w * oc;
    return in < (1LL << 31) && out < (1LL << 31);
}

int cuda_conv_few_takes(conv_geom g, int oc, int pass) {
    if (pass == CUDA_CONV_DX) return 0;
    return g.in_c >= 1 && g.in_c <= FEW_MAX_C && g.kh * g.kw * g.in_c <= FEW_MAX_K &&
           oc >= FEW_MIN_OC && oc % 4 == 0 && oc <= FEW_MAX_OC && fits_int(g, oc);
}

static int aligned16(const void *p) {
    return ((size_t)p & 15) == 0;
}

int cuda_conv_few_fwd(cudaStream_t stream, conv_geom g, int oc, const float *x, const float *w,
                      float *y) {
    if (!cuda_conv_few_takes(g, oc, CUDA_CONV_FWD) || !aligned16(y)) return 0;
    const int pixels = g.batch * g.out_h * g.out_w, per_block = FEW_THREADS / (oc / 4);
    conv_few_fwd_kernel<<<(pixels + per_block - 1) / per_block, FEW_THREADS, 0, stream>>>(g, oc, x,
                                                                                          w, y);
    cudaCheck(cudaGetLastError());
    return 1;
}

/* Pixels a slice of the weight gradient: the largest of 4,096, 2,048, 1,024, 512 and 256 whose
 * blocks give at least FEW_DW_WARPS warps (16 on each of an H100's or H200's 132
 * multiprocessors), else 256. It sets the order of the sums: the geometry alone decides it. */
static int few_dw_slice(conv_geom g, int oc) {
    const int items = g.kh * g.kw * g.in_c * (oc / 4);
    const long warps_per_slice = (long)(items + FEW_THREADS - 1) / FEW_THREADS * (FEW_THREADS / 32);
    return cuda_conv_dw_slice(g.batch * g.out_h * g.out_w, warps_per_slice, 4096, FEW_DW_WARPS);
}

size_t cuda_conv_few_dw_floats(conv_geom g, int oc) {
    const int pixels = g.batch * g.out_h * g.out_w, slice = few_dw_slice(g, oc);
    const int slices = (pixels + slice - 1) / slice;
    return slices > 1 ? (size_t)slices * oc * g.kh * g.kw * g.in_c : 0;
}

int cuda_conv_few_dw(cudaStream_t stream, conv_geom g, int oc, const float *x, const float *dy,
                     float *partial, float *dw) {
    if (!cuda_conv_few_takes(g, oc, CUDA_CONV_DW) || !aligned16(dy)) return 0;
    const int pixels = g.batch * g.out_h * g.out_w, k_total = g.kh * g.kw * g.in_c;
    const int slice = few_dw_slice(g, oc), slices = (pixels + slice - 1) / slice;
    const int items = k_total * (oc / 4);
    dim3 grid(slices, (items + FEW_THREADS - 1) / FEW_THREADS);
    float *out = slices > 1 ? partial : dw;
    conv_few_dw_kernel<<<grid, FEW_THREADS, 0, stream>>>(g, oc, x, dy, out, slice);
    cudaCheck(cudaGetLastError());
    if (slices > 1) cuda_conv_dw_sum(stream, oc * k_total, slices, partial, dw);
    return 1;
}
