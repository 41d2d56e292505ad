/* Internal: launchers of our CUDA kernels, one cuda_<op>.cu each. All run on `stream`, take
 * device pointers (unless stated) and match the CPU reference of the same op in device_cpu.c. */
#ifndef SS_KERNELS_CUDA_OPS_H
#define SS_KERNELS_CUDA_OPS_H

#include "kernels/cuda_common.h"
#include "kernels/device_impl.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void cuda_axpy(cudaStream_t stream, size_t n, float a, const float *x, float *y);
void cuda_scale(cudaStream_t stream, size_t n, float a, float *x);
/* xs: device array of k device pointers */
void cuda_mean(cudaStream_t stream, size_t n, int k, const float *const *xs, float *out);
/* partials (blocks): per-block sums of squares in double; the caller adds them in order */
void cuda_nrm2_partials(cudaStream_t stream, size_t n, const float *x, double *partials,
                        int blocks);
void cuda_masked_copy(cudaStream_t stream, size_t n, const uint8_t *mask, const float *src,
                      float *dst);
void cuda_bias_add(cudaStream_t stream, int rows, int cols, const float *bias, float *y);
void cuda_relu_fwd(cudaStream_t stream, size_t n, const float *x, float *y);
void cuda_relu_bwd(cudaStream_t stream, size_t n, const float *y, const float *dy, float *dx);
void cuda_im2col(cudaStream_t stream, conv_geom g, const float *x, float *col);
/* Implicit-GEMM convolution (cuda_conv.cu): whether it takes a geometry (dx: the input gradient
 * as well); the forward pass and the input gradient (wt: oc * kh * kw * in_c floats of scratch),
 * each returning 0, having done nothing, for a geometry or alignment it does not take. */
int cuda_conv_implicit_takes(conv_geom g, int oc, int dx);
int cuda_conv_implicit_fwd(cudaStream_t stream, conv_geom g, int oc, const float *x, const float *w,
                           float *y);
int cuda_conv_implicit_dx(cudaStream_t stream, conv_geom g, int oc, const float *dy, const float *w,
                          float *wt, float *dx);
/* the flipped weights of a convolution's input gradient: wt (in_c, kh, kw, oc) from
 * w (oc, kh, kw, in_c), the taps reversed */
void cuda_conv_flip(cudaStream_t stream, int oc, int kh, int kw, int in_c, const float *w,
                    float *wt);
/* the input gradient of a stride-1 convolution (kh == kw) as a convolution: of dy (B, out_h,
 * out_w, oc) by the flipped weights, padding kh - 1 - pad, into (B, in_h, in_w, in_c) */
conv_geom cuda_conv_dx_geom(conv_geom g, int oc);
/* Tiled implicit-GEMM convolution (cuda_conv_tiled.cu): whether it takes a geometry for a pass;
 * the forward pass, the input gradient at stride 1 (wt as above) and the weight gradient
 * (partial: cuda_conv_tiled_dw_floats floats of scratch, NULL when that is 0), each returning
 * 0, having done nothing, for a geometry or alignment it does not take. */
enum { CUDA_CONV_FWD, CUDA_CONV_DX, CUDA_CONV_DW };
int cuda_conv_tiled_takes(conv_geom g, int oc, int pass);
int cuda_conv_tiled_fwd(cudaStream_t stream, conv_geom g, int oc, const float *x, const float *w,
                        float *y);
int cuda_conv_tiled_dx(cudaStream_t stream, conv_geom g, int oc, const float *dy, const float *w,
                       float *wt, float *dx);
size_t cuda_conv_tiled_dw_floats(conv_geom g, int oc);
int cuda_conv_tiled_dw(cudaStream_t stream, conv_geom g, int oc, const float *x, const float *dy,
                       float *partial, float *dw);
/* The pixels of a weight gradient's slice: the largest of largest, largest / 2, ... down to 256
 * whose slices of warps_per_slice warps make at least `warps` warps, else 256 */
int cuda_conv_dw_slice(int pixels, long warps_per_slice, int largest, long warps);
/* dw (n floats) = the sum of partial[0 .. slices - 1][n], slice by slice in order (the weight
 * gradients' second stage) */
void cuda_conv_dw_sum(cudaStream_t stream, int n, int slices, const float *partial, float *dw);
/* Convolutions of 1 to 4 input channels (cuda_conv_few.cu): whether they take a geometry for a pass
 * (the forward pass and the weight gradient; kh * kw * in_c <= 75, 16 <= oc <= 64, oc % 4 == 0),
 * the forward pass, the scratch of the weight gradient's slices (floats; 0: none) and the weight
 * gradient, each returning 0 where it does not take the geometry */
int cuda_conv_few_takes(conv_geom g, int oc, int pass);
int cuda_conv_few_fwd(cudaStream_t stream, conv_geom g, int oc, const float *x, const float *w,
                      float *y);
size_t cuda_conv_few_dw_floats(conv_geom g, int oc);
int cuda_conv_few_dw(cudaStream_t stream, conv_geom g, int oc, const float *x, const float *dy,
                     float *partial, float *dw);
void cuda_col2im(cudaStream_t stream, conv_geom g, const float *col, float *dx);
void cuda_maxpool_fwd(cudaStream_t stream, int batch, int h, int w, int c, const float *x,
                      float *y);
void cuda_maxpool_bwd(cudaStream_t stream, int batch, int h, int w, int c, const float *x,
                      const float *dy, float *dx);
/* partial: cuda_bn_partial_doubles(rows, cols) doubles of scratch on the stream */
/* db (cols) = beta db + the sum over rows of dy (rows, cols), summed in double */
void cuda_bias_grad(cudaStream_t stream, int rows, int cols, const float *dy, float beta,
                    double *partial, float *db);
size_t cuda_bn_partial_doubles(int rows, int cols);
void cuda_bn_fwd_train(cudaStream_t stream, int rows, int cols, const float *x, const float *gamma,
                       const float *beta, float momentum, float eps, float *run_mean,
                       float *run_var, float *save_mean, float *save_invstd, double *partial,
                       float *y);
void cuda_bn_fwd_infer(cudaStream_t stream, int rows, int cols, const float *x, const float *gamma,
                       const float *beta, const float *run_mean, const float *run_var, float eps,
                       float *y);
/* dx may be NULL */
void cuda_bn_bwd(cudaStream_t stream, int rows, int cols, const float *x, const float *dy,
                 const float *gamma, const float *save_mean, const float *save_invstd,
                 double *partial, float *dgamma, float *dbeta, float *dx);
void cuda_avgpool_fwd(cudaStream_t stream, int batch, int hw, int c, const float *x, float *y);
void cuda_avgpool_bwd(cudaStream_t stream, int batch, int hw, int c, const float *dy, float *dx);
void cuda_shortcut_fwd(cudaStream_t stream, shortcut_geom g, const float *x, float *y);
void cuda_shortcut_bwd(cudaStream_t stream, shortcut_geom g, const float *dy, float *dx);
/* loss_rows (B) per-sample loss in double, correct_rows (B) 0/1; dlogits may be NULL */
void cuda_softmax_xent(cudaStream_t stream, int batch, int classes, const float *logits,
                       const uint8_t *labels, float *dlogits, double *loss_rows, int *correct_rows);
void cuda_sgd(cudaStream_t stream, size_t n, float *w, const float *g, float *v, float lr, float mu,
              float wd, int nesterov);

/* Transformer ops (device_impl.h states each) */
void cuda_ln_fwd(cudaStream_t stream, int rows, int cols, const float *x, const float *gamma,
                 const float *beta, float eps, float *mean, float *rstd, float *y);
void cuda_ln_bwd(cudaStream_t stream, int rows, int cols, const float *x, const float *dy,
                 const float *gamma, const float *mean, const float *rstd, float *dgamma,
                 float *dbeta, float *dx);
void cuda_gelu_fwd(cudaStream_t stream, size_t n, const float *x, float *y);
void cuda_gelu_bwd(cudaStream_t stream, size_t n, const float *x, const float *dy, float *dx);
void cuda_embed_fwd(cudaStream_t stream, int batch, int t, int d, const float *tokens, int ld,
                    const float *wte, float scale, const float *pos, float *y);
void cuda_embed_bwd(cudaStream_t stream, int batch, int t, int d, const float *tokens, int ld,
                    const float *dy, float scale, int vocab, int accumulate, float *dwte,
                    float *dpos);
void cuda_attn_softmax_fwd(cudaStream_t stream, int rows, int t, const float *x, float *y);
void cuda_attn_softmax_bwd(cudaStream_t stream, int rows, int t, const float *y, const float *dy,
                           float *dx);
void cuda_dropout(cudaStream_t stream, size_t n, float p, uint64_t seed, const float *x, float *y);
/* loss_rows (rows) per-row loss in double, correct_rows (rows) 0/1 */
void cuda_xent_tokens(cudaStream_t stream, int rows, int vocab, const float *logits,
                      const float *tokens, int ld, int t, float *dlogits, double *loss_rows,
                      int *correct_rows);

#ifdef __cplusplus
}
#endif

#endif
