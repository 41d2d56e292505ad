/* Internal: direct 2-D convolution on the CPU (stride 1, zero padding, NHWC; the forward pass and
 * the filter gradient also at a stride: conv_direct_supports_strided, and the input gradient at a
 * stride by a pass of its own: conv_direct_data_strided), without im2col.
 *
 *     if (conv_direct_supports(&g, oc, need_dx)) {
 *         float *ws = device_alloc(dev, conv_direct_workspace_floats(&g, oc));
 *         conv_direct_forward(&g, oc, x, w, bias, relu, ws, y, NULL, threads);
 *         conv_direct_backward(&g, oc, x, dy, w, ws, dw, db, need_dx ? dx : NULL, NULL, threads);
 *     }
 *
 * The im2col + SGEMM path materializes a column matrix kh*kw times the size of the input (627 KB
 * a sample for the cnn's conv2) that im2col writes and the BLAS then packs again: with 64 output
 * channels a column entry is used for only 128 FLOPs, so that traffic cost about a third of the
 * cnn's step (measured on a Zen 5 EPYC: conv2's SGEMMs ran at 160-230 GFLOP/s in the step,
 * against 250 for a large SGEMM, and im2col and col2im took 3 ms of 25 more). Here register tiles
 * of outputs (up to 14 pixels x 32 channels in 28 AVX-512 accumulators) read the zero-padded input
 * directly: each input value is broadcast from L1 and each weight vector is loaded once per tile.
 *
 * Every output is one chain of fused multiply-adds in a fixed order, written out so that a scalar
 * fmaf loop gives the same bits (tests/test_kernels.c checks it):
 *   forward:  y(p, o) = relu?(sum over (ki, kj, c) ascending of x * w + bias(o))
 *   filter:   dw(o, ki, kj, c) = sum over (sample, oh, ow) ascending of x * dy
 *   bias:     db(o) = sum over (sample, oh, ow) ascending of dy (additions)
 *   data:     dx(p, c) = sum over (a, b, o) ascending of dy_pad(ih + a, iw + b, o) *
 *             w(o, kh-1-a, kw-1-b, c), dy_pad being dy with kh-1-pad zero rows and kw-1-pad zero
 *             columns on each side (the transposed convolution)
 * The chains leave out the terms whose x (forward, filter) or dy_pad (data) lies in a row of the
 * zero frame above or below the image (a tile's pixels lie along one row, so they share those
 * rows: a 3 x 3 kernel's first and last output rows take 2 of its 3 rows; 4.8 % of the terms on a
 * 14 x 14 map). On small maps (conv_direct_skips_frame: under 8 x 8 output pixels and narrower
 * than 8, such as vgg:11's 7 x 7, 3 x 3 and 1 x 1 maps) they also leave out those in the frame's
 * columns: 8 of the 9 taps of a 3 x 3 kernel on a 1 x 1 map. Such a term adds +0 or -0, so
 * leaving it out changes nothing unless the sum so far is -0 (only an underflow gives one) or the
 * other factor is not finite. Small maps go in groups of up to 14
 * samples: a forward or data tile is then one pixel of each sample of the group, and a filter
 * tile sums the samples of a chunk (their x and dy about 1 MiB), in order, before storing; the
 * chains stay those above.
 * Each chain is the same whatever the tiles, so the AVX-512 and the AVX2 variants give the same
 * bits. It needs AVX-512F, or AVX2 with FMA (checked at run time; the code is compiled for them
 * whatever the build flags), oc a multiple of 16 and, for the data gradient, in_c a multiple of
 * 16. Elsewhere the layers use im2col + SGEMM; the two paths round differently (float ulps). */
#ifndef SS_KERNELS_CONV_DIRECT_H
#define SS_KERNELS_CONV_DIRECT_H

#include "kernels/device_impl.h"

#include <stddef.h>

typedef enum conv_direct_isa {
    CONV_DIRECT_NONE = 0,
    CONV_DIRECT_AVX2 = 1,  /* AVX2 and FMA: tiles 2 vectors of 8 floats wide */
    CONV_DIRECT_AVX512 = 2 /* AVX-512F: tiles up to 2 (data) or 4 (filter) vectors of 16 */
} conv_direct_isa;

/* the widest instruction set this CPU (and compiler) runs the passes with */
conv_direct_isa conv_direct_best_isa(void);
/* Caps the instruction set the passes use (default CONV_DIRECT_AVX512, i.e. the best); tests
 * lower it to check that every variant gives the same bits. Not thread-safe: set it first. */
void conv_direct_cap_isa(conv_direct_isa cap);
/* 1 when the passes run here (within the cap) */
int conv_direct_available(void);
/* 1 when the geometry suits it: available, stride 1, oc % 16 == 0, and in_c % 16 == 0 if
 * need_dx */
int conv_direct_supports(const conv_geom *g, int oc, int need_dx);
/* 1 when the forward pass and the filter and bias gradients (not the data gradient: dx NULL)
 * run here at g's stride, whatever it is: available, oc % 16 == 0. A stride s reads the padded
 * input s pixels apart along a row and s rows apart; the chains are those below with input pixel
 * (oh s + ki - pad, ow s + kj - pad). */
int conv_direct_supports_strided(const conv_geom *g, int oc);
/* 1 when conv_direct_data_strided takes g: available, a stride over 1, in_c % 16 == 0, kernels
 * of at most 16 x 16 */
int conv_direct_supports_strided_dx(const conv_geom *g, int oc);
/* 1 when the passes leave out of each chain the terms whose input lies in the zero frame (see
 * above): maps under 8 x 8 output pixels and narrower than 8, taken in groups of samples */
int conv_direct_skips_frame(const conv_geom *g);
/* floats of workspace the passes need (packed weights, a transposed filter gradient, one padded
 * sample, one sample's output gradient) */
size_t conv_direct_workspace_floats(const conv_geom *g, int oc);

/* threads: the samples are split into that many contiguous ranges, one a thread (pthreads; the
 * hooks are then called from several threads, for distinct samples). The outputs and the data
 * gradient are the same bits for any count; the filter and bias gradients are each range's sum
 * (in sample order) added in range order, so with one thread they are the chains stated above and
 * with n they depend on n (deterministically), as OpenBLAS's results depend on its thread count.
 * Where conv_direct_filter_by_rows says so, the filter gradient is instead split by its rows
 * over the threads, each summing the whole batch: the same bits as one thread. */
/* 1 when conv_direct_backward on `threads` threads splits the filter gradient by rows: small
 * maps (conv_direct_skips_frame) whose filter gradient outweighs the batch's x and dy (4 kkc oc >
 * batch (in + out floats a sample)), without hooks, at least 32 rows a thread */
int conv_direct_filter_by_rows(const conv_geom *g, int oc, int threads, int hooks);

/* Per-sample hooks, so that what follows the convolution (the cnn's max-pool) runs on a sample
 * while it is in cache. NULL members (or a NULL hooks pointer): none. */
typedef struct conv_direct_hooks {
    void *ctx;
    /* forward: 1 to leave y alone and compute each sample's output in the workspace, for
     * output_done to consume */
    int output_in_workspace;
    /* forward: sample b's output y_b (out_h, out_w, oc) is complete */
    void (*output_done)(void *ctx, int b, const float *y_b);
    /* backward: writes sample b's output gradient (out_h, out_w, oc) into dy_b; dy is not read */
    void (*output_grad)(void *ctx, int b, float *dy_b);
} conv_direct_hooks;

/* y (B, out_h, out_w, oc) = conv(x, w) + bias, then max(., 0) when relu; w (oc, kh, kw, in_c) */
void conv_direct_forward(const conv_geom *g, int oc, const float *x, const float *w,
                         const float *bias, int relu, float *ws, float *y,
                         const conv_direct_hooks *hooks, int threads);
/* From dy (B, out_h, out_w, oc), all overwritten: dw (oc, kh, kw, in_c) the weight gradient,
 * db (oc) the bias gradient (rows of dy added in order, as the bias_grad op does) and, unless dx
 * is NULL, dx (B, in_h, in_w, in_c) the input gradient. */
void conv_direct_backward(const conv_geom *g, int oc, const float *x, const float *dy,
                          const float *w, float *ws, float *dw, float *db, float *dx,
                          const conv_direct_hooks *hooks, int threads);

/* The input gradient of a strided convolution (conv_direct_supports_strided_dx), dx (B, in_h,
 * in_w, in_c) overwritten: each element the chain
 *   dx(p, c) = sum over (ki, kj, o) ascending of dy(oh, ow, o) * w(o, ki, kj, c)
 * over the taps whose output pixel (oh, ow) = ((ih + pad - ki) / s, (iw + pad - kj) / s) exists
 * and lies on the stride (the others, which add nothing, left out), each sample the same bits on
 * any number of threads and either instruction set. Tiles of input pixels a stride apart along
 * a row share their taps, the weights read as (tap, o, c) from a copy per call. */
void conv_direct_data_strided(const conv_geom *g, int oc, const float *dy, const float *w,
                              float *dx, int threads);

#endif
