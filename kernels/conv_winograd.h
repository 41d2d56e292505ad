/* Internal: 3 x 3 convolutions of stride 1 on the CPU by Winograd's minimal filtering F(4 x 4,
 * 3 x 3) (Lavin and Gray, Fast Algorithms for Convolutional Neural Networks, CVPR 2016,
 * arXiv:1509.09308), NHWC, as cuDNN and oneDNN run such layers.
 *
 *     if (conv_winograd_supports(&g, oc)) {
 *         float *ws = device_alloc(dev, conv_winograd_workspace_floats(&g, oc));
 *         conv_winograd_forward(&g, oc, x, w, bias, relu, ws, y, threads);
 *         conv_winograd_backward(&g, oc, x, dy, w, ws, dw, dx, threads);
 *     }
 *
 * The output is cut into tiles of 4 x 4 pixels; a tile's 6 x 6 input patch d (zeros outside the
 * image) and each 3 x 3 kernel g are transformed, V = B^T d B and U = G g G^T, and the tile's
 * output is Y = A^T M A with M = sum over the input channels of U (.) V, elementwise over the 36
 * positions: for each position one matrix product (tiles x in_c) x (in_c x oc), by the direct
 * convolution's register tiles where this CPU runs them (conv_direct_tiles.h: AVX-512 or AVX2
 * with FMA, each element one fused multiply-add chain in order, the same bits in both), else
 * through the BLAS.
 * That is 36 products a tile and channel pair where the direct convolution has 16 x 9 = 144.
 *   data gradient: the same forward pass over dy with the kernel turned by 180 degrees and its
 *     channels exchanged (the transposed convolution of stride 1);
 *   filter gradient: dw = G^T S G with S = sum over the tiles of V (.) (A dY A^T), dY a tile's
 *     output gradient (zeros outside the image), again one product (in_c x tiles) x (tiles x oc)
 *     a position.
 * The batch goes in chunks of whole samples (about 96 tiles, decided by the geometry alone), so
 * the workspace does not grow with the batch; the filter gradient adds the chunks in order. On
 * one thread the chunks go one after the other in the workspace. On `threads` threads with the
 * register tiles, each thread takes whole chunks of the forward and data-gradient passes, and the
 * filter gradient goes in wider chunks where they are small, its transforms over the tiles split on
 * the threads and its 36 products one a thread (the tiles' chains do not depend on the chunks),
 * in planes kept between such passes outside the workspace; through the BLAS, chunk by chunk,
 * the transforms split over the tiles and the products one a thread, each a single-threaded BLAS
 * call (OpenBLAS held to one thread meanwhile). So every result is the same bits on any thread
 * count (and, on the register tiles, on any instruction set they
 * run; the BLAS's products give other bits). The values differ from the direct convolution's in the
 * last bits (the transforms' rounding): tests/test_kernels_winograd.c bounds them against double
 * sums. */
#ifndef SS_KERNELS_CONV_WINOGRAD_H
#define SS_KERNELS_CONV_WINOGRAD_H

#include "kernels/device_impl.h"

#include <stddef.h>

/* 1 when g suits these passes and gains from them: a 3 x 3 kernel, stride 1, padding 1 (the
 * output as large as the input), maps of at least 6 x 6 pixels, in_c and oc multiples of 16, and
 * enabled (below); where the products run through the BLAS (no register tiles on this CPU), also
 * in_c and oc at least 32 and in_c x oc at least 64 x 128 (narrower products run too far below
 * the BLAS's rate: ResNet-20's 32- and 64-channel layers lost to the direct passes on one thread
 * and on two). On the register tiles every ResNet-20 stage gains (batch 64, one thread, forward +
 * backward: 16 channels on 28 x 28 maps 7.1 -> 6.2-6.7 ms, 32 on 14 x 14 6.5 -> 4.8-4.9, 64 on
 * 7 x 7 5.4 -> 3.7; docs/PERFORMANCE.md). */
int conv_winograd_supports(const conv_geom *g, int oc);
/* Enables (1, the default) or disables (0) the passes for conv_winograd_supports; tests and
 * benchmarks compare them with the direct convolution. Not thread-safe: set it first. */
void conv_winograd_enable(int on);
/* The tiles of a chunk of samples (about: whole samples, at least one), 96 by default: the
 * products' rows. vgg:11's 14 x 14 layer took 29-30 ms forward and backward with chunks of 64 or
 * 96 tiles, 33-35 with 128 and 35-44 with 256 or 512 (its transformed chunk then outgrows a 1 MB
 * L2 cache), the 7 x 7 layers the same within noise; one thread, batch 64. Tests take fewer to
 * cover several chunks on small batches (0: the default). Not thread-safe. */
enum { CONV_WINOGRAD_CHUNK_TILES = 96 };
void conv_winograd_set_chunk_tiles(int tiles);
/* floats of the workspace the passes need, whatever the batch */
size_t conv_winograd_workspace_floats(const conv_geom *g, int oc);

/* y (B, h, w, oc) = conv(x, w) + bias, then max(., 0) when relu; w (oc, 3, 3, in_c) */
void conv_winograd_forward(const conv_geom *g, int oc, const float *x, const float *w,
                           const float *bias, int relu, float *ws, float *y, int threads);
/* From dy (B, h, w, oc), overwritten: dw (oc, 3, 3, in_c) and, unless dx is NULL, dx (B, h, w,
 * in_c). The bias gradient is the caller's (a sum of dy's rows). */
void conv_winograd_backward(const conv_geom *g, int oc, const float *x, const float *dy,
                            const float *w, float *ws, float *dw, float *dx, int threads);

#endif
