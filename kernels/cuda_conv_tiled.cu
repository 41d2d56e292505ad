/* Tiled implicit-GEMM convolution on NHWC tensors: the forward pass, the input gradient at
 * stride 1 and the weight gradient, without the im2col column matrix.
 *
 * As a GEMM, the forward pass is y (P, oc) = col (P, K) w^T (K, oc), P = B * out_h * out_w output
 * pixels and K = kh * kw * in_c, where col's row p holds the input pixels under the kernel at p,
 * channels innermost. The kernels tile it as an SGEMM does: a block of 256 threads computes a
 * tile of BM pixels by BN channels; it walks K in stages of 8 (one tap, 8 consecutive channels:
 * in_c % 8 == 0), staging each stage's part of col (read from the input where the tap falls, zero
 * in the padding) and of w in shared memory, two buffers, the next stage's global reads in flight
 * while the current one is computed; each thread sums TM pixels by 4 channels in registers. Each
 * output is one fused multiply-add chain over k = 0 .. K - 1 in order, so its bits depend neither
 * on the tile sizes nor on scheduling.
 *
 * The input gradient at stride 1 is the same kernel over the output gradient with the kernel
 * flipped (cuda_conv_flip, cuda_conv.cu), its in and out channels swapped, padding
 * kh - 1 - pad.
 *
 * The weight gradient dw (oc, K) = dy^T (oc, P) col (P, K) sums over P, which is large (ResNet-20's
 * first stage at batch 256: 200,704) where oc and K are small (16 and 144): blocks of BMo output
 * channels by 64 columns each sum a slice of 256 to 1,024 pixels, in order, into a partial sum; the
 * partial sums are then added slice by slice, in order, so the result does not depend on
 * scheduling either. */
#include "kernels/cuda_ops.h"

enum {
    TC_THREADS = 256,  /* forward and input-gradient blocks */
    TC_BK = 8,         /* K per stage: one tap, 8 channels */
    TC_TN = 4,         /* output channels per thread */
    TC_DW_BN = 64,     /* weight gradient: columns of K per block */
    TC_DW_WARPS = 2048 /* weight gradient: the warps its slices of pixels aim at */
};

/* ---- forward (and input gradient) ---- */

template <int BN, int TM> struct tc_shape {
    static constexpr int tnt = BN / TC_TN;       /* threads along the channels */
    static constexpr int tmt = TC_THREADS / tnt; /* threads along the pixels */
    static constexpr int bm = tmt * TM;          /* pixels per block */
    static constexpr int a_f4 = bm * 2;          /* float4 of col a stage */
    static constexpr int b_n = BN * TC_BK;       /* floats of w a stage */
    static constexpr int a_slots = (a_f4 + TC_THREADS - 1) / TC_THREADS; /* a thread's */
    static constexpr int b_slots = (b_n + TC_THREADS - 1) / TC_THREADS;
};

template <int BN, int TM>
static __global__ void __launch_bounds__(TC_THREADS)
    conv_tiled_kernel(conv_geom g, int oc, const float *__restrict__ x, const float *__restrict__ w,
                      float *__restrict__ y) {
    typedef tc_shape<BN, TM> S;
    static_assert(S::a_f4 % TC_THREADS == 0 || TC_THREADS % S::a_f4 == 0, "col slots");
    static_assert(S::b_n % TC_THREADS == 0 || TC_THREADS % S::b_n == 0, "w slots");
    /* The two threads that stage a pixel's 8 channels write rows k and k + 4 of the same column:
     * the same bank (a 2-way conflict on 51 % of the stores, by Nsight Compute, for ResNet-20's
     * first stage). Rows of bm + 4 floats put them 16 banks apart, but on an H200 the forward pass
     * then took 0.057-0.059 ms against 0.053-0.054 (2026-11-26), so the rows stay bm floats. */
    __shared__ __align__(16) float as[2][TC_BK][S::bm];
    __shared__ __align__(16) float bs[2][TC_BK][BN];
    const int tid = threadIdx.x, st = g.stride > 1 ? g.stride : 1;
    const int pixels = g.batch * g.out_h * g.out_w, m0 = blockIdx.x * S::bm, n0 = blockIdx.y * BN;
    const int k_total = g.kh * g.kw * g.in_c, chunks = g.in_c / TC_BK;
    const int stages = g.kh * g.kw * chunks;

    /* the pixel of each col slot: its image's first row, and its window's top-left corner */
    int a_row0[S::a_slots], a_ih0[S::a_slots], a_iw0[S::a_slots];
#pragma unroll
    for (int s = 0; s < S::a_slots; s++) {
        const int i = tid + s * TC_THREADS, p = m0 + (i >> 1);
        if (p < pixels) {
            const int ow = p % g.out_w, oh = (p / g.out_w) % g.out_h, b = p / (g.out_w * g.out_h);
            a_row0[s] = b * g.in_h;
            a_ih0[s] = oh * st - g.pad;
            a_iw0[s] = ow * st - g.pad;
        } else {
            a_row0[s] = 0;
            a_ih0[s] = -(1 << 20); /* outside the image for every tap */
            a_iw0[s] = 0;
        }
    }
    float4 ra[S::a_slots];
    float rb[S::b_slots];
    auto load = [&](int stage) {
        const int tap = stage / chunks, c0 = (stage - tap * chunks) * TC_BK;
        const int ki = tap / g.kw, kj = tap - ki * g.kw;
#pragma unroll
        for (int s = 0; s < S::a_slots; s++) {
            if (tid + s * TC_THREADS >= S::a_f4) break;
            const int q = (tid + s * TC_THREADS) & 1;
            const int ih = a_ih0[s] + ki, iw = a_iw0[s] + kj;
            ra[s] =
                (unsigned)ih < (unsigned)g.in_h && (unsigned)iw < (unsigned)g.in_w
                    ? *(const float4 *)(x + ((a_row0[s] + ih) * g.in_w + iw) * g.in_c + c0 + 4 * q)
                    : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int s = 0; s < S::b_slots; s++) {
            const int i = tid + s * TC_THREADS, n = i / TC_BK, kk = i % TC_BK;
            if (i >= S::b_n) break;
            rb[s] = w[(n0 + n) * k_total + tap * g.in_c + c0 + kk];
        }
    };
    auto store = [&](int buf) {
#pragma unroll
        for (int s = 0; s < S::a_slots; s++) {
            const int i = tid + s * TC_THREADS, m = i >> 1, k = 4 * (i & 1);
            if (i >= S::a_f4) break;
            as[buf][k][m] = ra[s].x;
            as[buf][k + 1][m] = ra[s].y;
            as[buf][k + 2][m] = ra[s].z;
            as[buf][k + 3][m] = ra[s].w;
        }
#pragma unroll
        for (int s = 0; s < S::b_slots; s++) {
            const int i = tid + s * TC_THREADS;
            if (i >= S::b_n) break;
            bs[buf][i % TC_BK][i / TC_BK] = rb[s];
        }
    };

    const int tn = tid % S::tnt, tm = tid / S::tnt;
    float acc[TM][TC_TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TC_TN; j++)
            acc[i][j] = 0.0f;

    load(0);
    store(0);
    __syncthreads();
    for (int t = 0; t < stages; t++) {
        const int cur = t & 1;
        if (t + 1 < stages) load(t + 1);
#pragma unroll
        for (int kk = 0; kk < TC_BK; kk++) {
            float a[TM];
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                const float4 v = *(const float4 *)&as[cur][kk][tm * TM + i];
                a[i] = v.x;
                a[i + 1] = v.y;
                a[i + 2] = v.z;
                a[i + 3] = v.w;
            }
            const float4 b = *(const float4 *)&bs[cur][kk][tn * TC_TN];
#pragma unroll
            for (int i = 0; i < TM; i++) {
                acc[i][0] = fmaf(a[i], b.x, acc[i][0]);
                acc[i][1] = fmaf(a[i], b.y, acc[i][1]);
                acc[i][2] = fmaf(a[i], b.z, acc[i][2]);
                acc[i][3] = fmaf(a[i], b.w, acc[i][3]);
            }
        }
        if (t + 1 < stages) store(cur ^ 1);
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; i++) {
        const int p = m0 + tm * TM + i;
        if (p < pixels)
            *(float4 *)(y + (size_t)p * oc + n0 + tn * TC_TN) =
                make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    }
}

/* blocks of TM = 8 where they are at least this many, else TM = 4 (twice the blocks): two for
 * each of an H100's or H200's 132 multiprocessors. The bits do not depend on the choice. */
enum { TC_MIN_BLOCKS = 264 };

template <int BN>
static void launch_bn(cudaStream_t stream, conv_geom g, int oc, const float *x, const float *w,
                      float *y) {
    const int pixels = g.batch * g.out_h * g.out_w;
    const int bm8 = tc_shape<BN, 8>::bm, bm4 = tc_shape<BN, 4>::bm;
    const int tiles_n = oc / BN;
    if ((long)((pixels + bm8 - 1) / bm8) * tiles_n >= TC_MIN_BLOCKS) {
        dim3 grid((pixels + bm8 - 1) / bm8, tiles_n);
        conv_tiled_kernel<BN, 8><<<grid, TC_THREADS, 0, stream>>>(g, oc, x, w, y);
    } else {
        dim3 grid((pixels + bm4 - 1) / bm4, tiles_n);
        conv_tiled_kernel<BN, 4><<<grid, TC_THREADS, 0, stream>>>(g, oc, x, w, y);
    }
    cudaCheck(cudaGetLastError());
}

static void launch_fwd(cudaStream_t stream, conv_geom g, int oc, const float *x, const float *w,
                       float *y) {
    if (oc % 64 == 0)
        launch_bn<64>(stream, g, oc, x, w, y);
    else if (oc % 32 == 0)
        launch_bn<32>(stream, g, oc, x, w, y);
    else
        launch_bn<16>(stream, g, oc, x, w, y);
}

static int fits_int(conv_geom g, int oc) {
    const long long in = (long long)g.batch * g.in_h * g.in_w * g.in_c;
    const long long out = (long long)g.batch * g.out_h * g.out_w * oc;
    const long long k = (long long)oc * g.kh * g.kw * g.in_c;
    return in < (1LL << 31) && out < (1LL << 31) && k < (1LL << 31);
}

static int aligned16(const void *p) {
    return ((size_t)p & 15) == 0;
}

int cuda_conv_tiled_takes(conv_geom g, int oc, int pass) {
    if (g.in_c % TC_BK || oc % 16 || !fits_int(g, oc)) return 0;
    if (pass != CUDA_CONV_DX) return 1;
    /* the input gradient: a stride-1 convolution of dy (oc channels) into in_c channels */
    return g.stride <= 1 && g.kh == g.kw && g.pad <= g.kh - 1 && oc % TC_BK == 0 &&
           g.in_c % 16 == 0;
}

int cuda_conv_tiled_fwd(cudaStream_t stream, conv_geom g, int oc, const float *x, const float *w,
                        float *y) {
    if (!cuda_conv_tiled_takes(g, oc, CUDA_CONV_FWD) || !aligned16(x) || !aligned16(y)) return 0;
    launch_fwd(stream, g, oc, x, w, y);
    return 1;
}

int cuda_conv_tiled_dx(cudaStream_t stream, conv_geom g, int oc, const float *dy, const float *w,
                       float *wt, float *dx) {
    if (!cuda_conv_tiled_takes(g, oc, CUDA_CONV_DX) || !aligned16(dy) || !aligned16(dx)) return 0;
    cuda_conv_flip(stream, oc, g.kh, g.kw, g.in_c, w, wt);
    launch_fwd(stream, cuda_conv_dx_geom(g, oc), g.in_c, dy, wt, dx);
    return 1;
}

/* ---- weight gradient ---- */

/* dw partial (BMo channels from o0, 64 columns from k0) = the sum over the pixels of slice z of
 * dy[p][o] col[p][k]; 4 x 4 outputs a thread, BMo * 4 threads. */
template <int BMO>
static __global__ void __launch_bounds__(BMO * 4)
    conv_tiled_dw_kernel(conv_geom g, int oc, const float *__restrict__ x,
                         const float *__restrict__ dy, float *__restrict__ out, int out_slice,
                         int slice) {
    constexpr int threads = BMO * 4;
    constexpr int x_f4 = TC_BK * (TC_DW_BN / 4);            /* float4 of col a stage */
    constexpr int x_slots = (x_f4 + threads - 1) / threads; /* a thread's */
    constexpr int d_f4 = TC_BK * BMO / 4;                   /* float4 of dy a stage */
    static_assert(x_f4 % threads == 0 || threads % x_f4 == 0, "col slots");
    static_assert(d_f4 <= threads, "dy slots");
    __shared__ __align__(16) float ds[2][TC_BK][BMO];
    __shared__ __align__(16) float xs[2][TC_BK][TC_DW_BN];
    const int tid = threadIdx.x, st = g.stride > 1 ? g.stride : 1;
    const int pixels = g.batch * g.out_h * g.out_w, k_total = g.kh * g.kw * g.in_c;
    const int k0 = blockIdx.x * TC_DW_BN, o0 = blockIdx.y * BMO;
    const int p_begin = blockIdx.z * slice;
    const int p_end = p_begin + slice < pixels ? p_begin + slice : pixels;
    const int stages = (p_end - p_begin + TC_BK - 1) / TC_BK;

    /* each col slot: a fixed column group (4 channels of one tap) and pixel row kk of the stage;
     * its pixel advances by TC_BK each stage */
    int x_ki[x_slots], x_kj[x_slots], x_c[x_slots], x_b[x_slots], x_oh[x_slots], x_ow[x_slots];
#pragma unroll
    for (int s = 0; s < x_slots; s++) {
        const int i = tid + s * threads, kk = i / (TC_DW_BN / 4), grp = i % (TC_DW_BN / 4);
        const int k = k0 + 4 * grp;
        const int tap = k / g.in_c;
        x_c[s] = k < k_total ? k - tap * g.in_c : -1;
        x_ki[s] = tap / g.kw;
        x_kj[s] = tap - x_ki[s] * g.kw;
        const int p = p_begin + kk;
        x_ow[s] = p % g.out_w;
        x_oh[s] = (p / g.out_w) % g.out_h;
        x_b[s] = p / (g.out_w * g.out_h);
    }
    float4 rx[x_slots], rd = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    auto load = [&](int stage) {
        const int p0 = p_begin + stage * TC_BK;
#pragma unroll
        for (int s = 0; s < x_slots; s++) {
            if (tid + s * threads >= x_f4) break;
            const int kk = (tid + s * threads) / (TC_DW_BN / 4);
            const int ih = x_oh[s] * st - g.pad + x_ki[s], iw = x_ow[s] * st - g.pad + x_kj[s];
            rx[s] =
                p0 + kk < p_end && x_c[s] >= 0 && (unsigned)ih < (unsigned)g.in_h &&
                        (unsigned)iw < (unsigned)g.in_w
                    ? *(const float4 *)(x +
                                        (((size_t)x_b[s] * g.in_h + ih) * g.in_w + iw) * g.in_c +
                                        x_c[s])
                    : zero;
            /* the slot's pixel for the next stage */
            x_ow[s] += TC_BK;
            while (x_ow[s] >= g.out_w) {
                x_ow[s] -= g.out_w;
                if (++x_oh[s] == g.out_h) {
                    x_oh[s] = 0;
                    x_b[s]++;
                }
            }
        }
        if (tid < d_f4) {
            const int kk = tid / (BMO / 4), q = tid % (BMO / 4);
            rd = p0 + kk < p_end ? *(const float4 *)(dy + (size_t)(p0 + kk) * oc + o0 + 4 * q)
                                 : zero;
        }
    };
    auto store = [&](int buf) {
#pragma unroll
        for (int s = 0; s < x_slots; s++) {
            const int i = tid + s * threads, kk = i / (TC_DW_BN / 4), grp = i % (TC_DW_BN / 4);
            if (i >= x_f4) break;
            *(float4 *)&xs[buf][kk][4 * grp] = rx[s];
        }
        if (tid < d_f4) {
            const int kk = tid / (BMO / 4), q = tid % (BMO / 4);
            *(float4 *)&ds[buf][kk][4 * q] = rd;
        }
    };

    const int to = tid / (TC_DW_BN / 4), tk = tid % (TC_DW_BN / 4);
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            acc[i][j] = 0.0f;
    load(0);
    store(0);
    __syncthreads();
    for (int t = 0; t < stages; t++) {
        const int cur = t & 1;
        if (t + 1 < stages) load(t + 1);
#pragma unroll
        for (int kk = 0; kk < TC_BK; kk++) {
            const float4 a = *(const float4 *)&ds[cur][kk][4 * to];
            const float4 b = *(const float4 *)&xs[cur][kk][4 * tk];
            const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
        if (t + 1 < stages) store(cur ^ 1);
        __syncthreads();
    }
    float *o = out + (size_t)blockIdx.z * out_slice;
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int k = k0 + 4 * tk + j;
            if (k < k_total) o[(size_t)(o0 + 4 * to + i) * k_total + k] = acc[i][j];
        }
}

/* dw[i] = the sum over the slices of partial[s][i], in order */
static __global__ void conv_dw_sum_kernel(int n, int slices, const float *__restrict__ partial,
                                          float *__restrict__ dw) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float s = partial[i];
        for (int z = 1; z < slices; z++)
            s += partial[(size_t)z * n + i];
        dw[i] = s;
    }
}

int cuda_conv_dw_slice(int pixels, long warps_per_slice, int largest, long warps) {
    int slice = largest;
    while (slice > 256 && (long)((pixels + slice - 1) / slice) * warps_per_slice < warps)
        slice /= 2;
    return slice;
}

void cuda_conv_dw_sum(cudaStream_t stream, int n, int slices, const float *partial, float *dw) {
    conv_dw_sum_kernel<<<cuda_grid((size_t)n), CUDA_BLOCK, 0, stream>>>(n, slices, partial, dw);
    cudaCheck(cudaGetLastError());
}

/* Pixels summed by one block of the weight gradient: the largest of 1,024, 512 and 256 whose
 * blocks give at least TC_DW_WARPS warps (16 on each of an H100's or H200's 132
 * multiprocessors), else 256. On an H200, ResNet-20 at batch 256 (2026-11-26): 1,024 pixels a
 * block left its first stage's 588 blocks of 2 warps at 13.5 % occupancy, 0.197 ms a backward
 * pass against 0.158 ms with 512; the second stage's 0.132 against 0.113 ms with 256. The slices
 * set the order of the sums, so the choice depends on the geometry alone. */
static int dw_slice(conv_geom g, int oc) {
    const int k_total = g.kh * g.kw * g.in_c;
    const int bmo = oc % 64 == 0 ? 64 : oc % 32 == 0 ? 32 : 16;
    const long warps_per_slice =
        (long)((k_total + TC_DW_BN - 1) / TC_DW_BN) * (oc / bmo) * (bmo * 4 / 32);
    return cuda_conv_dw_slice(g.batch * g.out_h * g.out_w, warps_per_slice, 1024, TC_DW_WARPS);
}

size_t cuda_conv_tiled_dw_floats(conv_geom g, int oc) {
    const int pixels = g.batch * g.out_h * g.out_w, slice = dw_slice(g, oc);
    const int slices = (pixels + slice - 1) / slice;
    return slices > 1 ? (size_t)slices * oc * g.kh * g.kw * g.in_c : 0;
}

template <int BMO>
static void launch_dw(cudaStream_t stream, conv_geom g, int oc, const float *x, const float *dy,
                      float *out, int slice, int slices) {
    const int k_total = g.kh * g.kw * g.in_c;
    dim3 grid((k_total + TC_DW_BN - 1) / TC_DW_BN, oc / BMO, slices);
    conv_tiled_dw_kernel<BMO><<<grid, BMO * 4, 0, stream>>>(g, oc, x, dy, out, oc * k_total, slice);
    cudaCheck(cudaGetLastError());
}

int cuda_conv_tiled_dw(cudaStream_t stream, conv_geom g, int oc, const float *x, const float *dy,
                       float *partial, float *dw) {
    if (!cuda_conv_tiled_takes(g, oc, CUDA_CONV_DW) || !aligned16(x) || !aligned16(dy)) return 0;
    const int pixels = g.batch * g.out_h * g.out_w, n = oc * g.kh * g.kw * g.in_c;
    const int slice = dw_slice(g, oc), slices = (pixels + slice - 1) / slice;
    if (slices > 65535) return 0; /* gridDim.z */
    float *out = slices > 1 ? partial : dw;
    if (oc % 64 == 0)
        launch_dw<64>(stream, g, oc, x, dy, out, slice, slices);
    else if (oc % 32 == 0)
        launch_dw<32>(stream, g, oc, x, dy, out, slice, slices);
    else
        launch_dw<16>(stream, g, oc, x, dy, out, slice, slices);
    if (slices > 1) cuda_conv_dw_sum(stream, n, slices, partial, dw);
    return 1;
}
