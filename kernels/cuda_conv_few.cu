/* Convolutions of few input channels (a network's first layer: 1 channel for Fashion-MNIST, 3 for
 * CIFAR) on NHWC tensors: the forward pass and the weight gradient, without im2col columns.
 *
 * As a GEMM such a layer has K = kh * kw * in_c of 9 to 75 (the cnn's conv1: 25) against P =
 * B * out_h * out_w of hundreds of thousands of output pixels: im2col writes and SGEMM reads a
 * column matrix K floats wide for 2 K flops a pixel and channel, and the tiled kernels
 * (cuda_conv_tiled.cu) need in_c % 8 == 0. Here a block takes a band of output rows of one
 * image and stages the input rows under it in shared memory once, padding included (at most
 * FEW_XS floats), so that a patch element is read at a fixed offset from its pixel's corner:
 *
 * - forward: the block also stages the kernel transposed (K x oc); a thread computes 4 output
 *   channels of 4 pixels at a time (one float4 of weights for 4 patch values), each output a
 *   chain of K fused multiply-adds in the order of k, written as one float4;
 * - weight gradient dw (oc, K) = dy^T (oc, P) col (P, K): a thread sums 4 channels by up to
 *   FEW_J columns k over its bands' pixels, FEW_DS / oc at a time (their dy staged), in order;
 *   where one column a thread would still leave half the block idle (ResNet's first layer: 4 x 9
 *   threads), groups of threads take every groups-th pixel and their sums are added in order. A
 *   block takes consecutive bands, and the blocks' partial sums are then added block by block in
 *   order (cuda_conv_dw_sum), so the result does not depend on scheduling.
 *
 * The bands follow from the geometry and the batch alone (few_band), and so does the order of
 * the weight gradient's sums. The input gradient (a first layer needs none) stays with col2im. */
#include "kernels/cuda_ops.h"

enum {
    FEW_THREADS = 256, /* a block */
    FEW_MAX_C = 4,     /* input channels */
    FEW_MAX_K = 75,    /* kh * kw * in_c: 5 x 5 x 3 */
    FEW_MIN_OC = 16,   /* output channels, a multiple of 4 */
    FEW_MAX_OC = 64,
    FEW_XS = 6144,           /* floats of a band's input rows in shared memory (24 KiB) */
    FEW_TP = 4,              /* forward: pixels a thread computes together */
    FEW_J = 5,               /* weight gradient: columns a thread, at most (75 / (256 / 16)) */
    FEW_DS = 4096,           /* weight gradient: floats of dy a stage (FEW_DS / oc pixels) */
    FEW_MIN_BLOCKS = 264,    /* two for each of an H100's or H200's 132 multiprocessors */
    FEW_MAX_DW_BLOCKS = 1024 /* weight gradient: blocks, so partial sums, at most */
};

/* A band: rows output rows of one image (the last band of an image may have fewer); bands an
 * image; its input rows are (rows - 1) * stride + kh rows of wp = (out_w - 1) * stride + kw
 * columns (the padding's zeros included) of in_c floats. */
struct few_band {
    int rows, bands, row_f, rows_in;
};

static few_band few_band_of(conv_geom g) {
    const int st = g.stride > 1 ? g.stride : 1;
    few_band b = {0, 0, ((g.out_w - 1) * st + g.kw) * g.in_c, 0};
    if (g.out_h < 1 || (long)g.kh * b.row_f > FEW_XS) return b;
    int fit = (FEW_XS / b.row_f - g.kh) / st + 1;
    if (fit > g.out_h) fit = g.out_h;
    int bands = (g.out_h + fit - 1) / fit;
    /* more, thinner bands where the batch alone gives fewer than FEW_MIN_BLOCKS */
    const int want = (FEW_MIN_BLOCKS + g.batch - 1) / g.batch;
    if (bands < want) bands = want < g.out_h ? want : g.out_h;
    b.rows = (g.out_h + bands - 1) / bands;
    b.bands = (g.out_h + b.rows - 1) / b.rows;
    b.rows_in = (b.rows - 1) * st + g.kh;
    return b;
}

/* Stages band u's input rows into xs (rows_in x row_f floats, zero outside the image); returns
 * the band's first output row. Row r of xs is input row oh0 * stride - pad + r, its element e
 * the input's element e - pad * in_c of that row. */
static __device__ int few_stage(const conv_geom &g, const few_band &bd, const float *__restrict__ x,
                                int u, float *xs) {
    const int st = g.stride > 1 ? g.stride : 1;
    const int b = u / bd.bands, oh0 = (u - b * bd.bands) * bd.rows;
    const int row_in = g.in_w * g.in_c, lead = g.pad * g.in_c, ih0 = oh0 * st - g.pad;
    const float *xb = x + (size_t)b * g.in_h * row_in;
    /* every thread of the block at once: the loads do not wait for each other */
    for (int i = threadIdx.x; i < bd.rows_in * bd.row_f; i += FEW_THREADS) {
        const int r = i / bd.row_f, off = i - r * bd.row_f - lead, ih = ih0 + r;
        xs[i] = (unsigned)ih < (unsigned)g.in_h && (unsigned)off < (unsigned)row_in
                    ? xb[(size_t)ih * row_in + off]
                    : 0.0f;
    }
    return oh0;
}

/* acc[j] (4 channels of pixel j) = the chain over k of xs[xo[j] + offset of k] w[k][4 q ..] */
template <int TP>
static __device__ void few_fwd_px(const conv_geom &g, const few_band &bd, const float *xs,
                                  const float *ws, int oc, int q, const int *xo, float4 *acc) {
#pragma unroll
    for (int j = 0; j < TP; j++)
        acc[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float *wk = ws + 4 * q;
    for (int ki = 0; ki < g.kh; ki++)
        for (int kj = 0; kj < g.kw; kj++) {
            const int o = ki * bd.row_f + kj * g.in_c;
            for (int c = 0; c < g.in_c; c++, wk += oc) {
                const float4 wv = *(const float4 *)wk;
#pragma unroll
                for (int j = 0; j < TP; j++) {
                    const float a = xs[xo[j] + o + c];
                    acc[j].x = fmaf(a, wv.x, acc[j].x);
                    acc[j].y = fmaf(a, wv.y, acc[j].y);
                    acc[j].z = fmaf(a, wv.z, acc[j].z);
                    acc[j].w = fmaf(a, wv.w, acc[j].w);
                }
            }
        }
}

/* y (P, oc) = col (P, K) w^T (K, oc), block u the band u: oc / 4 threads a pixel slot, the slots
 * taking the band's pixels FEW_TP at a time (slot, slot + slots, ...), then one at a time */
static __global__ void __launch_bounds__(FEW_THREADS)
    conv_few_fwd_kernel(conv_geom g, few_band bd, int oc, const float *__restrict__ x,
                        const float *__restrict__ w, float *__restrict__ y) {
    __shared__ __align__(16) float ws[FEW_MAX_K * FEW_MAX_OC];
    __shared__ float xs[FEW_XS];
    const int tid = threadIdx.x, k_total = g.kh * g.kw * g.in_c, tq = oc / 4;
    const int st = g.stride > 1 ? g.stride : 1;
    for (int i = tid; i < oc * k_total; i += FEW_THREADS) { /* w is (oc, K): read in order */
        const int o = i / k_total;
        ws[(i - o * k_total) * oc + o] = w[i];
    }
    const int u = blockIdx.x, oh0 = few_stage(g, bd, x, u, xs);
    __syncthreads();
    const int rows = g.out_h - oh0 < bd.rows ? g.out_h - oh0 : bd.rows;
    const int npx = rows * g.out_w, slots = FEW_THREADS / tq;
    const int slot = tid / tq, q = tid - slot * tq;
    if (slot >= slots) return;
    float *yb = y + ((size_t)(u / bd.bands) * g.out_h + oh0) * g.out_w * oc + 4 * q;
    int pl = slot;
    for (; pl + (FEW_TP - 1) * slots < npx; pl += FEW_TP * slots) {
        int xo[FEW_TP];
        float4 acc[FEW_TP];
#pragma unroll
        for (int j = 0; j < FEW_TP; j++) {
            const int p = pl + j * slots, oh = p / g.out_w, ow = p - oh * g.out_w;
            xo[j] = oh * st * bd.row_f + ow * st * g.in_c;
        }
        few_fwd_px<FEW_TP>(g, bd, xs, ws, oc, q, xo, acc);
#pragma unroll
        for (int j = 0; j < FEW_TP; j++)
            *(float4 *)(yb + (size_t)(pl + j * slots) * oc) = acc[j];
    }
    for (; pl < npx; pl += slots) {
        const int oh = pl / g.out_w, ow = pl - oh * g.out_w;
        const int xo[1] = {oh * st * bd.row_f + ow * st * g.in_c};
        float4 acc[1];
        few_fwd_px<1>(g, bd, xs, ws, oc, q, xo, acc);
        *(float4 *)(yb + (size_t)pl * oc) = acc[0];
    }
}

/* The partial weight gradient of block z, which takes bands [z * per, (z + 1) * per): thread
 * (group, k, q) sums 4 channels from 4 q by the columns kt, kt + kts, ... (J of them) over the
 * group's pixels of each stage (the groups taking every groups-th pixel), in order; the groups'
 * sums are then added in order. Shared: a band's input rows, a stage's dy (FEW_DS / oc pixels)
 * and its pixels' corners in the band. */
template <int J>
static __global__ void __launch_bounds__(FEW_THREADS)
    conv_few_dw_kernel(conv_geom g, few_band bd, int oc, const float *__restrict__ x,
                       const float *__restrict__ dy, float *__restrict__ out, int per, int kts,
                       int groups) {
    __shared__ __align__(16) float ds[FEW_DS];
    __shared__ float xs[FEW_XS];
    __shared__ int xo[FEW_DS / FEW_MIN_OC];
    const int tid = threadIdx.x, k_total = g.kh * g.kw * g.in_c, tq = oc / 4;
    const int st = g.stride > 1 ? g.stride : 1, units = g.batch * bd.bands, stage_px = FEW_DS / oc;
    const int span = tq * kts, grp = tid / span, kt = (tid - grp * span) / tq;
    const int q = tid - grp * span - kt * tq, mine = grp < groups;
    int ko[J];
    float4 acc[J];
#pragma unroll
    for (int j = 0; j < J; j++) {
        const int k = kt + j * kts, tap = k / g.in_c, c = k - tap * g.in_c;
        const int ki = tap / g.kw, kj = tap - ki * g.kw;
        ko[j] = mine && k < k_total ? ki * bd.row_f + kj * g.in_c + c : 0;
        acc[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    const int z = blockIdx.x, u_end = (z + 1) * per < units ? (z + 1) * per : units;
    for (int u = z * per; u < u_end; u++) {
        __syncthreads(); /* the previous band's reads are done */
        const int oh0 = few_stage(g, bd, x, u, xs);
        const int rows = g.out_h - oh0 < bd.rows ? g.out_h - oh0 : bd.rows;
        const int npx = rows * g.out_w;
        const float *db = dy + ((size_t)(u / bd.bands) * g.out_h + oh0) * g.out_w * oc;
        for (int s0 = 0; s0 < npx; s0 += stage_px) {
            const int n = npx - s0 < stage_px ? npx - s0 : stage_px;
            if (s0 > 0) __syncthreads(); /* the previous stage's reads are done */
#pragma unroll 4
            for (int i = tid; i < n * tq; i += FEW_THREADS)
                ((float4 *)ds)[i] = *(const float4 *)(db + (size_t)s0 * oc + 4 * i);
            if (tid < n) {
                const int p = s0 + tid, oh = p / g.out_w, ow = p - oh * g.out_w;
                xo[tid] = oh * st * bd.row_f + ow * st * g.in_c;
            }
            __syncthreads();
            if (!mine) continue;
#pragma unroll 4
            for (int pl = grp; pl < n; pl += groups) {
                const float4 d = *(const float4 *)(ds + pl * oc + 4 * q);
                const float *xp = xs + xo[pl];
#pragma unroll
                for (int j = 0; j < J; j++) {
                    const float a = xp[ko[j]];
                    acc[j].x = fmaf(d.x, a, acc[j].x);
                    acc[j].y = fmaf(d.y, a, acc[j].y);
                    acc[j].z = fmaf(d.z, a, acc[j].z);
                    acc[j].w = fmaf(d.w, a, acc[j].w);
                }
            }
        }
    }
    if (groups > 1) { /* J == 1: the groups' sums through ds, added in order by group 0 */
        __syncthreads();
        if (mine) ((float4 *)ds)[tid] = acc[0];
        __syncthreads();
        if (grp != 0) return;
        for (int h = 1; h < groups; h++) {
            const float4 v = ((const float4 *)ds)[h * span + tid];
            acc[0].x += v.x;
            acc[0].y += v.y;
            acc[0].z += v.z;
            acc[0].w += v.w;
        }
    }
    if (!mine) return;
    float *o = out + (size_t)z * oc * k_total + (size_t)4 * q * k_total;
#pragma unroll
    for (int j = 0; j < J; j++) {
        const int k = kt + j * kts;
        if (k >= k_total) break;
        o[k] = acc[j].x;
        o[k_total + k] = acc[j].y;
        o[2 * k_total + k] = acc[j].z;
        o[3 * k_total + k] = acc[j].w;
    }
}

static int fits_int(conv_geom g, int oc) {
    const long long in = (long long)g.batch * g.in_h * g.in_w * g.in_c;
    const long long out = (long long)g.batch * g.out_h * g.out_w * oc;
    return in < (1LL << 31) && out < (1LL << 31);
}

int cuda_conv_few_takes(conv_geom g, int oc, int pass) {
    if (pass == CUDA_CONV_DX) return 0;
    return g.in_c >= 1 && g.in_c <= FEW_MAX_C && g.kh * g.kw * g.in_c <= FEW_MAX_K &&
           oc >= FEW_MIN_OC && oc % 4 == 0 && oc <= FEW_MAX_OC && fits_int(g, oc) &&
           few_band_of(g).rows > 0;
}

static int aligned16(const void *p) {
    return ((size_t)p & 15) == 0;
}

int cuda_conv_few_fwd(cudaStream_t stream, conv_geom g, int oc, const float *x, const float *w,
                      float *y) {
    if (!cuda_conv_few_takes(g, oc, CUDA_CONV_FWD) || !aligned16(y)) return 0;
    const few_band bd = few_band_of(g);
    const int units = g.batch * bd.bands;
    conv_few_fwd_kernel<<<units, FEW_THREADS, 0, stream>>>(g, bd, oc, x, w, y);
    cudaCheck(cudaGetLastError());
    return 1;
}

/* Bands a block of the weight gradient: one, or as many as keep the blocks, so the partial sums,
 * at most FEW_MAX_DW_BLOCKS. With the bands, this sets the order of the sums: the geometry and
 * the batch alone decide it. */
static int few_dw_per(conv_geom g, few_band bd) {
    const int units = g.batch * bd.bands;
    return (units + FEW_MAX_DW_BLOCKS - 1) / FEW_MAX_DW_BLOCKS;
}

size_t cuda_conv_few_dw_floats(conv_geom g, int oc) {
    const few_band bd = few_band_of(g);
    if (bd.rows == 0) return 0;
    const int per = few_dw_per(g, bd), blocks = (g.batch * bd.bands + per - 1) / per;
    return blocks > 1 ? (size_t)blocks * oc * g.kh * g.kw * g.in_c : 0;
}

int cuda_conv_few_dw(cudaStream_t stream, conv_geom g, int oc, const float *x, const float *dy,
                     float *partial, float *dw) {
    if (!cuda_conv_few_takes(g, oc, CUDA_CONV_DW) || !aligned16(dy)) return 0;
    const few_band bd = few_band_of(g);
    const int k_total = g.kh * g.kw * g.in_c, per = few_dw_per(g, bd);
    const int blocks = (g.batch * bd.bands + per - 1) / per;
    float *out = blocks > 1 ? partial : dw;
    /* a thread a column and 4 channels, in groups over the pixels where one group would leave
     * half the threads idle (ResNet's first convolution: 36 threads); else up to FEW_J columns a
     * thread */
    const int tq = oc / 4, one = tq * k_total <= FEW_THREADS / 2;
    const int groups = one ? FEW_THREADS / (tq * k_total) : 1;
    const int kts = one ? k_total : FEW_THREADS / tq, j = (k_total + kts - 1) / kts;
    if (j == 1)
        conv_few_dw_kernel<1>
            <<<blocks, FEW_THREADS, 0, stream>>>(g, bd, oc, x, dy, out, per, kts, groups);
    else if (j == 2)
        conv_few_dw_kernel<2>
            <<<blocks, FEW_THREADS, 0, stream>>>(g, bd, oc, x, dy, out, per, kts, groups);
    else if (j == 3)
        conv_few_dw_kernel<3>
            <<<blocks, FEW_THREADS, 0, stream>>>(g, bd, oc, x, dy, out, per, kts, groups);
    else
        conv_few_dw_kernel<FEW_J>
            <<<blocks, FEW_THREADS, 0, stream>>>(g, bd, oc, x, dy, out, per, kts, groups);
    cudaCheck(cudaGetLastError());
    if (blocks > 1) cuda_conv_dw_sum(stream, oc * k_total, blocks, partial, dw);
    return 1;
}
