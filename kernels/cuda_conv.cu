/* Implicit-GEMM convolution on NHWC tensors: each output element is summed from the input
 * directly, without the im2col column matrix, whose writing and reading is most of the time of a
 * convolution of few channels (ResNet-20's 16-channel layers at 28x28: 115 MB of columns a pass
 * at batch 256 for 0.9 GFLOP).
 *
 * A thread computes CONV_OT consecutive output channels of CONV_PX consecutive output pixels; a
 * block is CONV_THREADS such groups (gridDim.y tiles the output channels). The kernel loops
 * over the taps (ki, kj): the block stages the tap's weights for its channels (in_c x CONV_OT) in
 * shared memory, then each thread reads its input pixel's channels four at a time and adds them
 * into its accumulators. Each output is summed in one fixed order (taps row-major, channels
 * ascending), so results do not depend on scheduling.
 *
 * The input gradient of a stride-1 convolution is the same kernel over the output gradient with
 * the kernel flipped and its in and out channels swapped, and padding kh - 1 - pad. */
#include "kernels/cuda_ops.h"

/* CONV_PX 4 ran as fast as 1 at batch 256 on an H200 (ResNet-20's 16-channel layers: 0.066
 * against 0.068 ms a forward pass) and left the GPU a quarter of the blocks at batch 64 */
enum { CONV_THREADS = 128, CONV_OT = 16, CONV_PX = 1 };

/* y (B, out_h, out_w, oc) = conv(x (B, in_h, in_w, in_c), w (oc, kh, kw, in_c)); in_c % 4 == 0,
 * oc % CONV_OT == 0. A thread computes CONV_PX consecutive pixels (so that each weight read from
 * shared memory serves CONV_PX products) by CONV_OT channels. Shared memory: in_c * CONV_OT
 * floats. Taps outside the image read zeros (adding 0 * w changes no sum). */
static __global__ void conv_implicit_kernel(conv_geom g, int oc, const float *x, const float *w,
                                            float *y) {
    extern __shared__ float4 wsh4[];
    float *wsh = (float *)wsh4; /* [c][CONV_OT] of the current tap */
    const int st = g.stride > 1 ? g.stride : 1;
    const int oc0 = blockIdx.y * CONV_OT;
    const int pixels = g.batch * g.out_h * g.out_w;
    const int p0 = (blockIdx.x * CONV_THREADS + threadIdx.x) * CONV_PX;
    int pb[CONV_PX], poh[CONV_PX], pow_[CONV_PX];
#pragma unroll
    for (int k = 0; k < CONV_PX; k++) {
        const int p = p0 + k < pixels ? p0 + k : pixels - 1;
        pow_[k] = p % g.out_w;
        poh[k] = (p / g.out_w) % g.out_h;
        pb[k] = p / (g.out_w * g.out_h);
    }
    float acc[CONV_PX][CONV_OT];
#pragma unroll
    for (int k = 0; k < CONV_PX; k++)
#pragma unroll
        for (int o = 0; o < CONV_OT; o++)
            acc[k][o] = 0.0f;
    const int c4 = g.in_c / 4, row = g.kh * g.kw * g.in_c;
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int ki = 0; ki < g.kh; ki++)
        for (int kj = 0; kj < g.kw; kj++) {
            const int tap = ki * g.kw + kj;
            __syncthreads();
            for (int i = threadIdx.x; i < g.in_c * CONV_OT; i += CONV_THREADS) {
                const int c = i / CONV_OT, o = i % CONV_OT;
                wsh[i] = w[(size_t)(oc0 + o) * row + (size_t)tap * g.in_c + c];
            }
            __syncthreads();
            if (p0 >= pixels) continue;
            const float4 *xp[CONV_PX];
#pragma unroll
            for (int k = 0; k < CONV_PX; k++) {
                const int ih = poh[k] * st - g.pad + ki, iw = pow_[k] * st - g.pad + kj;
                xp[k] = ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w
                            ? (const float4 *)(x + (((size_t)pb[k] * g.in_h + ih) * g.in_w + iw) *
                                                       g.in_c)
                            : NULL;
            }
            for (int c = 0; c < c4; c++) {
                float4 v[CONV_PX];
#pragma unroll
                for (int k = 0; k < CONV_PX; k++)
                    v[k] = xp[k] ? xp[k][c] : zero;
                const float4 *wc = wsh4 + c * CONV_OT; /* 4 channels x CONV_OT / 4 float4 */
#pragma unroll
                for (int q = 0; q < CONV_OT / 4; q++) {
                    const float4 w0 = wc[q], w1 = wc[CONV_OT / 4 + q], w2 = wc[CONV_OT / 2 + q],
                                 w3 = wc[3 * CONV_OT / 4 + q];
#pragma unroll
                    for (int k = 0; k < CONV_PX; k++) {
                        float *a = acc[k] + 4 * q;
                        a[0] += v[k].x * w0.x;
                        a[0] += v[k].y * w1.x;
                        a[0] += v[k].z * w2.x;
                        a[0] += v[k].w * w3.x;
                        a[1] += v[k].x * w0.y;
                        a[1] += v[k].y * w1.y;
                        a[1] += v[k].z * w2.y;
                        a[1] += v[k].w * w3.y;
                        a[2] += v[k].x * w0.z;
                        a[2] += v[k].y * w1.z;
                        a[2] += v[k].z * w2.z;
                        a[2] += v[k].w * w3.z;
                        a[3] += v[k].x * w0.w;
                        a[3] += v[k].y * w1.w;
                        a[3] += v[k].z * w2.w;
                        a[3] += v[k].w * w3.w;
                    }
                }
            }
        }
#pragma unroll
    for (int k = 0; k < CONV_PX; k++) {
        if (p0 + k >= pixels) break;
        float4 *yp = (float4 *)(y + (size_t)(p0 + k) * oc + oc0);
#pragma unroll
        for (int q = 0; q < CONV_OT / 4; q++)
            yp[q] =
                make_float4(acc[k][4 * q], acc[k][4 * q + 1], acc[k][4 * q + 2], acc[k][4 * q + 3]);
    }
}

/* wt (in_c, kh, kw, oc) = w (oc, kh, kw, in_c) with the taps flipped: the weights of the
 * convolution that gives the input gradient */
static __global__ void conv_flip_kernel(int oc, int kh, int kw, int in_c, const float *w,
                                        float *wt) {
    const int n = oc * kh * kw * in_c;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const int c = i % in_c, kj = (i / in_c) % kw, ki = (i / (in_c * kw)) % kh,
                  o = i / (in_c * kw * kh);
        wt[(((size_t)c * kh + (kh - 1 - ki)) * kw + (kw - 1 - kj)) * oc + o] = w[i];
    }
}

void cuda_conv_flip(cudaStream_t stream, int oc, int kh, int kw, int in_c, const float *w,
                    float *wt) {
    const int n = oc * kh * kw * in_c;
    conv_flip_kernel<<<cuda_grid((size_t)n), CUDA_BLOCK, 0, stream>>>(oc, kh, kw, in_c, w, wt);
    cudaCheck(cudaGetLastError());
}

conv_geom cuda_conv_dx_geom(conv_geom g, int oc) {
    conv_geom t = {.batch = g.batch,
                   .in_h = g.out_h,
                   .in_w = g.out_w,
                   .in_c = oc,
                   .out_h = g.in_h,
                   .out_w = g.in_w,
                   .kh = g.kh,
                   .kw = g.kw,
                   .pad = g.kh - 1 - g.pad,
                   .stride = 1};
    return t;
}

int cuda_conv_implicit_takes(conv_geom g, int oc, int dx) {
    if (g.in_c % 4 || oc % CONV_OT) return 0;
    if ((size_t)g.batch * g.out_h * g.out_w >= (1u << 31)) return 0;
    if (!dx) return 1;
    /* the input gradient: stride 1, in_c outputs by tiles, padding kh - 1 - pad >= 0 */
    return (g.stride <= 1) && g.kh == g.kw && g.in_c % CONV_OT == 0 && oc % 4 == 0 &&
           g.pad <= g.kh - 1 && (size_t)g.batch * g.in_h * g.in_w < (1u << 31);
}

static int aligned16(const void *p) {
    return ((size_t)p & 15) == 0;
}

static void launch(cudaStream_t stream, conv_geom g, int oc, const float *x, const float *w,
                   float *y) {
    const int pixels = g.batch * g.out_h * g.out_w, per_block = CONV_THREADS * CONV_PX;
    dim3 grid((pixels + per_block - 1) / per_block, oc / CONV_OT);
    size_t shared = (size_t)g.in_c * CONV_OT * sizeof(float);
    if (shared > 48 * 1024)
        cudaCheck(cudaFuncSetAttribute(conv_implicit_kernel,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
    conv_implicit_kernel<<<grid, CONV_THREADS, shared, stream>>>(g, oc, x, w, y);
    cudaCheck(cudaGetLastError());
}

int cuda_conv_implicit_fwd(cudaStream_t stream, conv_geom g, int oc, const float *x, const float *w,
                           float *y) {
    if (!cuda_conv_implicit_takes(g, oc, 0) || !aligned16(x) || !aligned16(y)) return 0;
    launch(stream, g, oc, x, w, y);
    return 1;
}

int cuda_conv_implicit_dx(cudaStream_t stream, conv_geom g, int oc, const float *dy, const float *w,
                          float *wt, float *dx) {
    if (!cuda_conv_implicit_takes(g, oc, 1) || !aligned16(dy) || !aligned16(dx)) return 0;
    cuda_conv_flip(stream, oc, g.kh, g.kw, g.in_c, w, wt);
    launch(stream, cuda_conv_dx_geom(g, oc), g.in_c, dy, wt, dx);
    return 1;
}
