/* CUDA backend: cuBLAS for GEMM, our kernels (cuda_<op>.cu) for everything else, all on one
 * stream. Host-visible results (loss, norms) are reduced on the host in a fixed order so that
 * they do not depend on scheduling. cuBLAS runs in its default FP32 mode (no TF32), so results
 * stay close to the CPU reference. */
#include "kernels/cuda_blas.h"
#include "kernels/cuda_ops.h"

#include "common/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

/* Scratch buffers that grow on demand (device memory unless stated). */
enum cuda_scratch_slot {
    CUDA_SCRATCH_POINTERS = 0, /* device array of k pointers for mean */
    CUDA_SCRATCH_BYTES,        /* mask or labels */
    CUDA_SCRATCH_LOSS_ROWS,    /* (B) double */
    CUDA_SCRATCH_CORRECT_ROWS, /* (B) int */
    CUDA_SCRATCH_PARTIALS,     /* nrm2 per-block partials, double */
    CUDA_SCRATCH_BN_PARTIALS,  /* batch norm's per-row-block column sums, double */
    CUDA_SCRATCH_CONV_WT,      /* a convolution's flipped weights for its input gradient */
    CUDA_SCRATCH_CONV_DW,      /* a convolution's weight gradient by slices of pixels */
    CUDA_SCRATCH_COUNT
};

enum { CUDA_NRM2_BLOCKS = 256 };

/* A lane: one independent queue of work on the GPU, with its own stream, cuBLAS handle and
 * scratch, so that threads issuing different replicas' work (the engine's slots) never share a
 * handle and their kernels run side by side. Lane 0 is the device's own; lanes 1 .. n are made
 * by device_lanes_reserve. */
typedef struct cuda_lane {
    cudaStream_t stream;
    const cuda_blas_api *blas; /* cuBLAS, loaded with the first lane (cuda_blas.h) */
    cublasHandle_t cublas;
    cudaEvent_t ready; /* lane 0's work up to a lane_enter */
    void *scratch[CUDA_SCRATCH_COUNT];
    size_t scratch_bytes[CUDA_SCRATCH_COUNT];
    void *host_rows; /* host copy of loss/correct rows */
    size_t host_rows_bytes;
} cuda_lane;

enum { CUDA_MAX_LANES = 1025 }; /* lane 0 and one per engine thread (ENGINE_MAX_THREADS) */

typedef struct cuda_ctx {
    cuda_lane *lanes[CUDA_MAX_LANES];
    int n_lanes;   /* lanes 0 .. n_lanes - 1 exist */
    int managed;   /* device_share_with_host: device_alloc gives managed memory */
    int conv_mode; /* SYNCSIM_CUDA_CONV: 0 im2col, 1 implicit, 2 the default choice */
} cuda_ctx;

/* The lane this thread issues to (device_lane_enter); 0 outside the engine's tasks. */
static _Thread_local int tls_lane;

static cuda_ctx *ctx_of(device *dev) {
    return (cuda_ctx *)dev->ctx;
}

static cuda_lane *lane_of(device *dev) {
    cuda_ctx *c = ctx_of(dev);
    SS_ASSERT(tls_lane < c->n_lanes);
    return c->lanes[tls_lane];
}

static void *scratch(device *dev, int slot, size_t bytes) {
    cuda_lane *c = lane_of(dev);
    if (c->scratch_bytes[slot] < bytes) {
        cudaCheck(cudaStreamSynchronize(c->stream));
        if (c->scratch[slot]) cudaCheck(cudaFree(c->scratch[slot]));
        cudaCheck(cudaMalloc(&c->scratch[slot], bytes));
        c->scratch_bytes[slot] = bytes;
    }
    return c->scratch[slot];
}

static void *host_rows(device *dev, size_t bytes) {
    cuda_lane *c = lane_of(dev);
    if (c->host_rows_bytes < bytes) {
        free(c->host_rows);
        c->host_rows = ss_malloc(bytes);
        c->host_rows_bytes = bytes;
    }
    return c->host_rows;
}

static float *cu_alloc(device *dev, size_t count) {
    void *p = NULL;
    size_t bytes = (count ? count : 1) * sizeof(float);
    if (ctx_of(dev)->managed)
        cudaCheck(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal));
    else
        cudaCheck(cudaMalloc(&p, bytes));
    cudaCheck(cudaMemsetAsync(p, 0, bytes, lane_of(dev)->stream));
    cudaCheck(cudaStreamSynchronize(lane_of(dev)->stream));
    return (float *)p;
}

static void cu_free(device *dev, float *p) {
    cudaCheck(cudaStreamSynchronize(lane_of(dev)->stream));
    cudaCheck(cudaFree(p));
}

static void cu_upload(device *dev, float *dst, const float *host_src, size_t count) {
    cudaCheck(cudaMemcpyAsync(dst, host_src, count * sizeof(float), cudaMemcpyHostToDevice,
                              lane_of(dev)->stream));
}

static void cu_download(device *dev, float *host_dst, const float *src, size_t count) {
    cudaCheck(cudaMemcpyAsync(host_dst, src, count * sizeof(float), cudaMemcpyDeviceToHost,
                              lane_of(dev)->stream));
    cudaCheck(cudaStreamSynchronize(lane_of(dev)->stream));
}

static void cu_copy(device *dev, float *dst, const float *src, size_t count) {
    cudaCheck(cudaMemcpyAsync(dst, src, count * sizeof(float), cudaMemcpyDeviceToDevice,
                              lane_of(dev)->stream));
}

static void cu_zero(device *dev, float *dst, size_t count) {
    cudaCheck(cudaMemsetAsync(dst, 0, count * sizeof(float), lane_of(dev)->stream));
}

static void cu_sync(device *dev) {
    cudaCheck(cudaStreamSynchronize(lane_of(dev)->stream));
}

/* Managed memory lets the host touch a vector between kernels. Without concurrent managed
 * access the host may not touch any managed memory while some kernel runs, which an MPI
 * progressing a receive beside the kernels would do. */
static int cu_share_with_host(device *dev) {
    int dev_id = 0, concurrent = 0;
    cudaCheck(cudaGetDevice(&dev_id));
    cudaCheck(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, dev_id));
    if (!concurrent)
        return ss_error_set(SS_EDEVICE,
                            "device %s cannot share memory with the host while "
                            "kernels run (concurrentManagedAccess is 0); use "
                            "--device cpu",
                            dev->name);
    ctx_of(dev)->managed = 1;
    return SS_OK;
}

static void cu_place(device *dev, float *p, size_t count, int on_host) {
    cuda_lane *c = lane_of(dev);
    if (ctx_of(dev)->managed) {
        int id = cudaCpuDeviceId;
        if (!on_host) cudaCheck(cudaGetDevice(&id));
        const size_t bytes = count * sizeof(float);
#if CUDART_VERSION >= 12020
        struct cudaMemLocation to = {.type = on_host ? cudaMemLocationTypeHost
                                                     : cudaMemLocationTypeDevice,
                                     .id = on_host ? 0 : id};
#if CUDART_VERSION >= 13000
        cudaCheck(cudaMemPrefetchAsync(p, bytes, to, 0, c->stream));
#else
        cudaCheck(cudaMemPrefetchAsync_v2(p, bytes, to, 0, c->stream));
#endif
#else
        cudaCheck(cudaMemPrefetchAsync(p, bytes, id, c->stream));
#endif
    }
    if (on_host) cudaCheck(cudaStreamSynchronize(c->stream));
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands. */
static void cu_gemm(device *dev, int trans_a, int trans_b, int m, int n, int k, float alpha,
                    const float *a, int lda, const float *b, int ldb, float beta, float *c,
                    int ldc) {
    const cuda_lane *l = lane_of(dev);
    cublasCheck(l->blas->sgemm(l->cublas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                               trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a, lda,
                               &beta, c, ldc));
}

static void cu_bias_add(device *dev, int rows, int cols, const float *bias, float *y) {
    cuda_bias_add(lane_of(dev)->stream, rows, cols, bias, y);
}

/* db (cols) = beta db + the column sums of dy: batch norm's two-stage sum (cuda_batchnorm.cu: no
 * atomics, so deterministic; coalesced reads spread over the whole GPU for any shape, the
 * few-column, many-row case of conv1 (32 columns, B*784 rows) as well as a dense layer's). */
static void cu_bias_grad(device *dev, int rows, int cols, const float *dy, float beta, float *db) {
    double *partial = scratch(dev, CUDA_SCRATCH_BN_PARTIALS,
                              cuda_bn_partial_doubles(rows, cols) * sizeof(double));
    cuda_bias_grad(lane_of(dev)->stream, rows, cols, dy, beta, partial, db);
}

static void *cu_mark_create(device *dev) {
    (void)dev;
    cudaEvent_t ev;
    cudaCheck(cudaEventCreate(&ev));
    return ev;
}

static void cu_mark_record(device *dev, void *mark) {
    cudaCheck(cudaEventRecord((cudaEvent_t)mark, lane_of(dev)->stream));
}

static double cu_mark_seconds(device *dev, void *from, void *to) {
    (void)dev;
    float ms = 0.0f;
    cudaCheck(cudaEventSynchronize((cudaEvent_t)to));
    cudaCheck(cudaEventElapsedTime(&ms, (cudaEvent_t)from, (cudaEvent_t)to));
    return 1e-3 * ms;
}

static void cu_mark_destroy(device *dev, void *mark) {
    (void)dev;
    cudaCheck(cudaEventDestroy((cudaEvent_t)mark));
}

static void cu_relu_fwd(device *dev, size_t n, const float *x, float *y) {
    cuda_relu_fwd(lane_of(dev)->stream, n, x, y);
}

static void cu_relu_bwd(device *dev, size_t n, const float *y, const float *dy, float *dx) {
    cuda_relu_bwd(lane_of(dev)->stream, n, y, dy, dx);
}

static void cu_im2col(device *dev, const conv_geom *g, const float *x, float *col) {
    cuda_im2col(lane_of(dev)->stream, *g, x, col);
}

static void cu_col2im(device *dev, const conv_geom *g, const float *col, float *dx) {
    cuda_col2im(lane_of(dev)->stream, *g, col, dx);
}

/* Which convolutions take the implicit-GEMM kernels: SYNCSIM_CUDA_CONV=im2col none, =implicit
 * every geometry they compute; by default, over at least CONV_TILED_MIN_PIXELS output pixels:
 * - those the tiled kernels take (in_c % 8 == 0, oc % 16 == 0; kernels/cuda_conv_tiled.cu) with
 *   at most 32 channels in and out. On an H200 (2026-11-26) they were faster on ResNet-20's 16-
 *   and 32-channel layers at batch 256 (0.054 + 0.158 ms against 0.118 + 0.301 ms, forward and
 *   backward, on 16 channels; 0.049 + 0.113 against 0.064 + 0.173 on 32) and on its first stage
 *   at batch 64, and slower where cuBLAS's SGEMM has more channels to work with: the cnn's conv2
 *   (32 to 64 channels, 0.277 + 0.463 against 0.230 + 0.432 ms) and VGG-11's 64 to 128 (0.285 +
 *   0.649 against 0.229 + 0.457).
 * - those of 1 to 4 input channels (kernels/cuda_conv_few.cu: a network's first layer): the
 *   forward pass and the weight gradient. On an H200 at batch 256 (2026-11-27, three runs) they
 *   took the cnn's conv1 (1 to 32 channels, 5x5, its bias and bias gradient included) in
 *   0.062-0.063 + 0.083-0.087 ms, against 0.097-0.099 + 0.120-0.121 on im2col + SGEMM, and
 *   ResNet-20's first convolution (1 to 16, 3x3) in 0.016 + 0.028-0.029 against 0.031-0.033 +
 *   0.070.
 * The one-pixel-a-thread kernel (cuda_conv.cu) computes, with =implicit, what the others do not
 * (in_c % 4 == 0). Smaller batches stay on im2col + SGEMM, whose sums the CPU's reference shares
 * (docs/PERFORMANCE.md, "Tiled implicit-GEMM convolutions"). */
enum { CONV_TILED_MIN_PIXELS = 1 << 14, CONV_TILED_MAX_CHANNELS = 32 };

static int conv_implicit_wanted(device *dev, const conv_geom *g, int oc, int pass) {
    const int mode = ctx_of(dev)->conv_mode;
    if (mode == 2)
        return ((g->in_c <= CONV_TILED_MAX_CHANNELS && oc <= CONV_TILED_MAX_CHANNELS &&
                 cuda_conv_tiled_takes(*g, oc, pass)) ||
                cuda_conv_few_takes(*g, oc, pass)) &&
               (long)g->batch * g->out_h * g->out_w >= CONV_TILED_MIN_PIXELS;
    return mode;
}

/* SYNCSIM_CUDA_CONV read once, when the device opens */
static int conv_mode_of_env(void) {
    const char *e = getenv("SYNCSIM_CUDA_CONV");
    const int mode = e && !strcmp(e, "im2col") ? 0 : e && !strcmp(e, "implicit") ? 1 : 2;
    if (mode == 2 && e && *e)
        fprintf(stderr,
                "syncsim: warning: SYNCSIM_CUDA_CONV=%s is not im2col or implicit; the default "
                "choice of convolution kernels applies\n",
                e);
    return mode;
}

static int cu_conv_implicit(device *dev, const conv_geom *g, int oc, const float *x, const float *w,
                            float *y, int always) {
    if (!always && !conv_implicit_wanted(dev, g, oc, CUDA_CONV_FWD)) return 0;
    cudaStream_t stream = lane_of(dev)->stream;
    return cuda_conv_tiled_fwd(stream, *g, oc, x, w, y) ||
           cuda_conv_few_fwd(stream, *g, oc, x, w, y) ||
           cuda_conv_implicit_fwd(stream, *g, oc, x, w, y);
}

static int cu_conv_implicit_dx(device *dev, const conv_geom *g, int oc, const float *dy,
                               const float *w, float *dx, int always) {
    if (!always && !conv_implicit_wanted(dev, g, oc, CUDA_CONV_DX)) return 0;
    const int tiled = cuda_conv_tiled_takes(*g, oc, CUDA_CONV_DX);
    if (!tiled && !cuda_conv_implicit_takes(*g, oc, 1)) return 0;
    float *wt = scratch(dev, CUDA_SCRATCH_CONV_WT, (size_t)oc * g->kh * g->kw * g->in_c * 4);
    cudaStream_t stream = lane_of(dev)->stream;
    return (tiled && cuda_conv_tiled_dx(stream, *g, oc, dy, w, wt, dx)) ||
           cuda_conv_implicit_dx(stream, *g, oc, dy, w, wt, dx);
}

static int cu_conv_implicit_dw(device *dev, const conv_geom *g, int oc, const float *x,
                               const float *dy, float *dw, int always) {
    if (!always && !conv_implicit_wanted(dev, g, oc, CUDA_CONV_DW)) return 0;
    const int tiled = cuda_conv_tiled_takes(*g, oc, CUDA_CONV_DW);
    if (!tiled && !cuda_conv_few_takes(*g, oc, CUDA_CONV_DW)) return 0;
    const size_t partial =
        tiled ? cuda_conv_tiled_dw_floats(*g, oc) : cuda_conv_few_dw_floats(*g, oc);
    float *ws = partial ? scratch(dev, CUDA_SCRATCH_CONV_DW, partial * 4) : NULL;
    cudaStream_t stream = lane_of(dev)->stream;
    return tiled ? cuda_conv_tiled_dw(stream, *g, oc, x, dy, ws, dw)
                 : cuda_conv_few_dw(stream, *g, oc, x, dy, ws, dw);
}

static void cu_maxpool_fwd(device *dev, int batch, int h, int w, int c, const float *x, float *y) {
    cuda_maxpool_fwd(lane_of(dev)->stream, batch, h, w, c, x, y);
}

static void cu_maxpool_bwd(device *dev, int batch, int h, int w, int c, const float *x,
                           const float *dy, float *dx) {
    cuda_maxpool_bwd(lane_of(dev)->stream, batch, h, w, c, x, dy, dx);
}

static void cu_bn_fwd_train(device *dev, int rows, int cols, const float *x, const float *gamma,
                            const float *beta, float momentum, float eps, float *run_mean,
                            float *run_var, float *save_mean, float *save_invstd, float *y) {
    double *partial = scratch(dev, CUDA_SCRATCH_BN_PARTIALS,
                              cuda_bn_partial_doubles(rows, cols) * sizeof(double));
    cuda_bn_fwd_train(lane_of(dev)->stream, rows, cols, x, gamma, beta, momentum, eps, run_mean,
                      run_var, save_mean, save_invstd, partial, y);
}

static void cu_bn_fwd_infer(device *dev, int rows, int cols, const float *x, const float *gamma,
                            const float *beta, const float *run_mean, const float *run_var,
                            float eps, float *y) {
    cuda_bn_fwd_infer(lane_of(dev)->stream, rows, cols, x, gamma, beta, run_mean, run_var, eps, y);
}

static void cu_bn_bwd(device *dev, int rows, int cols, const float *x, const float *dy,
                      const float *gamma, const float *save_mean, const float *save_invstd,
                      float *dgamma, float *dbeta, float *dx) {
    double *partial = scratch(dev, CUDA_SCRATCH_BN_PARTIALS,
                              cuda_bn_partial_doubles(rows, cols) * sizeof(double));
    cuda_bn_bwd(lane_of(dev)->stream, rows, cols, x, dy, gamma, save_mean, save_invstd, partial,
                dgamma, dbeta, dx);
}

static void cu_avgpool_fwd(device *dev, int batch, int hw, int c, const float *x, float *y) {
    cuda_avgpool_fwd(lane_of(dev)->stream, batch, hw, c, x, y);
}

static void cu_avgpool_bwd(device *dev, int batch, int hw, int c, const float *dy, float *dx) {
    cuda_avgpool_bwd(lane_of(dev)->stream, batch, hw, c, dy, dx);
}

static void cu_shortcut_fwd(device *dev, const shortcut_geom *g, const float *x, float *y) {
    cuda_shortcut_fwd(lane_of(dev)->stream, *g, x, y);
}

static void cu_shortcut_bwd(device *dev, const shortcut_geom *g, const float *dy, float *dx) {
    cuda_shortcut_bwd(lane_of(dev)->stream, *g, dy, dx);
}

static double cu_softmax_xent(device *dev, int batch, int classes, const float *logits,
                              const uint8_t *labels, float *dlogits, int *correct) {
    cuda_lane *c = lane_of(dev);
    uint8_t *labels_dev = scratch(dev, CUDA_SCRATCH_BYTES, (size_t)batch);
    double *loss_dev = scratch(dev, CUDA_SCRATCH_LOSS_ROWS, (size_t)batch * sizeof(double));
    int *correct_dev = scratch(dev, CUDA_SCRATCH_CORRECT_ROWS, (size_t)batch * sizeof(int));
    cudaCheck(
        cudaMemcpyAsync(labels_dev, labels, (size_t)batch, cudaMemcpyHostToDevice, c->stream));
    cuda_softmax_xent(c->stream, batch, classes, logits, labels_dev, dlogits, loss_dev,
                      correct_dev);
    size_t bytes = (size_t)batch * (sizeof(double) + sizeof(int));
    double *loss_host = host_rows(dev, bytes);
    int *correct_host = (int *)(loss_host + batch);
    cudaCheck(cudaMemcpyAsync(loss_host, loss_dev, (size_t)batch * sizeof(double),
                              cudaMemcpyDeviceToHost, c->stream));
    cudaCheck(cudaMemcpyAsync(correct_host, correct_dev, (size_t)batch * sizeof(int),
                              cudaMemcpyDeviceToHost, c->stream));
    cudaCheck(cudaStreamSynchronize(c->stream));
    double sum = 0.0;
    int right = 0;
    for (int b = 0; b < batch; b++)
        sum += loss_host[b], right += correct_host[b];
    if (correct) *correct = right;
    return sum;
}

static void cu_sgd(device *dev, size_t n, float *w, const float *g, float *v, float lr, float mu,
                   float wd, int nesterov) {
    cuda_sgd(lane_of(dev)->stream, n, w, g, v, lr, mu, wd, nesterov);
}

static void cu_axpy(device *dev, size_t n, float a, const float *x, float *y) {
    cuda_axpy(lane_of(dev)->stream, n, a, x, y);
}

static void cu_scale(device *dev, size_t n, float a, float *x) {
    cuda_scale(lane_of(dev)->stream, n, a, x);
}

static void cu_mean(device *dev, size_t n, int k, const float *const *xs, float *out) {
    cuda_lane *c = lane_of(dev);
    const float **xs_dev = scratch(dev, CUDA_SCRATCH_POINTERS, (size_t)k * sizeof(float *));
    cudaCheck(cudaMemcpyAsync(xs_dev, xs, (size_t)k * sizeof(float *), cudaMemcpyHostToDevice,
                              c->stream));
    cuda_mean(c->stream, n, k, xs_dev, out);
    /* the pointer array may be overwritten by the next call: finish with it first */
    cudaCheck(cudaStreamSynchronize(c->stream));
}

static double cu_nrm2(device *dev, size_t n, const float *x) {
    cuda_lane *c = lane_of(dev);
    double *partials_dev = scratch(dev, CUDA_SCRATCH_PARTIALS, CUDA_NRM2_BLOCKS * sizeof(double));
    cuda_nrm2_partials(c->stream, n, x, partials_dev, CUDA_NRM2_BLOCKS);
    double partials[CUDA_NRM2_BLOCKS];
    cudaCheck(cudaMemcpyAsync(partials, partials_dev, sizeof partials, cudaMemcpyDeviceToHost,
                              c->stream));
    cudaCheck(cudaStreamSynchronize(c->stream));
    double s = 0.0;
    for (int i = 0; i < CUDA_NRM2_BLOCKS; i++)
        s += partials[i];
    return sqrt(s);
}

static void cu_masked_copy(device *dev, size_t n, const uint8_t *mask, const float *src,
                           float *dst) {
    cuda_lane *c = lane_of(dev);
    uint8_t *mask_dev = scratch(dev, CUDA_SCRATCH_BYTES, n);
    cudaCheck(cudaMemcpyAsync(mask_dev, mask, n, cudaMemcpyHostToDevice, c->stream));
    cuda_masked_copy(c->stream, n, mask_dev, src, dst);
    cudaCheck(cudaStreamSynchronize(c->stream));
}

static void lane_destroy(cuda_lane *l) {
    cudaCheck(cudaStreamSynchronize(l->stream));
    for (int i = 0; i < CUDA_SCRATCH_COUNT; i++)
        if (l->scratch[i]) cudaCheck(cudaFree(l->scratch[i]));
    cublasCheck(l->blas->destroy(l->cublas));
    cudaCheck(cudaEventDestroy(l->ready));
    cudaCheck(cudaStreamDestroy(l->stream));
    free(l->host_rows);
    free(l);
}

/* A lane with its stream, handle and event; NULL with the reason when one cannot be made. */
static cuda_lane *lane_create(char *reason, size_t reason_size) {
    cuda_lane *l = ss_calloc(1, sizeof *l);
    l->blas = cuda_blas(reason, reason_size);
    if (!l->blas) {
        free(l);
        return NULL;
    }
    cudaError_t err = cudaStreamCreateWithFlags(&l->stream, cudaStreamNonBlocking);
    if (err == cudaSuccess) {
        err = cudaEventCreateWithFlags(&l->ready, cudaEventDisableTiming);
        if (err != cudaSuccess) cudaStreamDestroy(l->stream);
    }
    if (err != cudaSuccess) {
        snprintf(reason, reason_size, "%s", cudaGetErrorString(err));
        free(l);
        return NULL;
    }
    cublasStatus_t st = l->blas->create(&l->cublas);
    if (st != CUBLAS_STATUS_SUCCESS) {
        snprintf(reason, reason_size, "cuBLAS: %s", l->blas->status_string(st));
        cudaEventDestroy(l->ready);
        cudaStreamDestroy(l->stream);
        free(l);
        return NULL;
    }
    cublasCheck(l->blas->set_stream(l->cublas, l->stream));
    return l;
}

static int cu_lanes_reserve(device *dev, int lanes) {
    cuda_ctx *c = ctx_of(dev);
    if (lanes + 1 > CUDA_MAX_LANES)
        return ss_error_set(SS_EUSAGE, "%d lanes asked of %s (at most %d)", lanes, dev->name,
                            CUDA_MAX_LANES - 1);
    while (c->n_lanes < lanes + 1) {
        char reason[200] = "";
        cuda_lane *l = lane_create(reason, sizeof reason);
        if (!l)
            return ss_error_set(SS_EDEVICE, "%s: cannot make stream %d of %d: %s", dev->name,
                                c->n_lanes, lanes, reason);
        c->lanes[c->n_lanes++] = l;
    }
    return SS_OK;
}

/* The lane's stream waits (on the GPU) for what lane 0 has queued so far. */
static void cu_lane_enter(device *dev, int lane) {
    cuda_ctx *c = ctx_of(dev);
    SS_ASSERT(lane >= 0 && lane < c->n_lanes);
    tls_lane = lane;
    if (lane == 0) return;
    cuda_lane *l = c->lanes[lane];
    cudaCheck(cudaEventRecord(l->ready, c->lanes[0]->stream));
    cudaCheck(cudaStreamWaitEvent(l->stream, l->ready, 0));
}

/* The host waits for the lane's work, so whatever reads its results next sees them. */
static void cu_lane_leave(device *dev) {
    cudaCheck(cudaStreamSynchronize(lane_of(dev)->stream));
    tls_lane = 0;
}

static int cu_memory_info(device *dev, double *free_bytes, double *total_bytes) {
    (void)dev;
    size_t f = 0, t = 0;
    cudaCheck(cudaMemGetInfo(&f, &t));
    *free_bytes = (double)f;
    *total_bytes = (double)t;
    return 1;
}

static void cu_close(device *dev) {
    cuda_ctx *c = ctx_of(dev);
    if (!c) return;
    for (int i = c->n_lanes - 1; i >= 0; i--)
        lane_destroy(c->lanes[i]);
    free(c);
    dev->ctx = NULL;
}

/* ---- Transformer ops ---- */

static void cu_gemm_batched(device *dev, int trans_a, int trans_b, int m, int n, int k, float alpha,
                            const float *a, int lda, long long stride_a, const float *b, int ldb,
                            long long stride_b, float beta, float *c, int ldc, long long stride_c,
                            int count) {
    const cuda_lane *l = lane_of(dev);
    cublasCheck(l->blas->sgemm_strided_batched(
        l->cublas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m,
        k, &alpha, b, ldb, stride_b, a, lda, stride_a, &beta, c, ldc, stride_c, count));
}

static void cu_ln_fwd(device *dev, int rows, int cols, const float *x, const float *gamma,
                      const float *beta, float eps, float *mean, float *rstd, float *y) {
    cuda_ln_fwd(lane_of(dev)->stream, rows, cols, x, gamma, beta, eps, mean, rstd, y);
}

static void cu_ln_bwd(device *dev, int rows, int cols, const float *x, const float *dy,
                      const float *gamma, const float *mean, const float *rstd, float *dgamma,
                      float *dbeta, float *dx) {
    cuda_ln_bwd(lane_of(dev)->stream, rows, cols, x, dy, gamma, mean, rstd, dgamma, dbeta, dx);
}

static void cu_gelu_fwd(device *dev, size_t n, const float *x, float *y) {
    cuda_gelu_fwd(lane_of(dev)->stream, n, x, y);
}

static void cu_gelu_bwd(device *dev, size_t n, const float *x, const float *dy, float *dx) {
    cuda_gelu_bwd(lane_of(dev)->stream, n, x, dy, dx);
}

static void cu_embed_fwd(device *dev, int batch, int t, int d, const float *tokens, int ld,
                         const float *wte, float scale, const float *pos, float *y) {
    cuda_embed_fwd(lane_of(dev)->stream, batch, t, d, tokens, ld, wte, scale, pos, y);
}

static void cu_embed_bwd(device *dev, int batch, int t, int d, const float *tokens, int ld,
                         const float *dy, float scale, int vocab, int accumulate, float *dwte,
                         float *dpos) {
    cuda_embed_bwd(lane_of(dev)->stream, batch, t, d, tokens, ld, dy, scale, vocab, accumulate,
                   dwte, dpos);
}

static void cu_attn_softmax_fwd(device *dev, int rows, int t, const float *x, float *y) {
    cuda_attn_softmax_fwd(lane_of(dev)->stream, rows, t, x, y);
}

static void cu_attn_softmax_bwd(device *dev, int rows, int t, const float *y, const float *dy,
                                float *dx) {
    cuda_attn_softmax_bwd(lane_of(dev)->stream, rows, t, y, dy, dx);
}

static void cu_dropout(device *dev, size_t n, float p, uint64_t seed, const float *x, float *y) {
    cuda_dropout(lane_of(dev)->stream, n, p, seed, x, y);
}

/* per-row losses and hits on the device, added on the host in row order */
static double cu_xent_tokens(device *dev, int rows, int vocab, const float *logits,
                             const float *tokens, int ld, int t, float *dlogits, int *correct) {
    cuda_lane *c = lane_of(dev);
    double *loss_dev = scratch(dev, CUDA_SCRATCH_LOSS_ROWS, (size_t)rows * sizeof(double));
    int *correct_dev = scratch(dev, CUDA_SCRATCH_CORRECT_ROWS, (size_t)rows * sizeof(int));
    cuda_xent_tokens(c->stream, rows, vocab, logits, tokens, ld, t, dlogits, loss_dev, correct_dev);
    double *loss_host = host_rows(dev, (size_t)rows * (sizeof(double) + sizeof(int)));
    int *correct_host = (int *)(loss_host + rows);
    cudaCheck(cudaMemcpyAsync(loss_host, loss_dev, (size_t)rows * sizeof(double),
                              cudaMemcpyDeviceToHost, c->stream));
    cudaCheck(cudaMemcpyAsync(correct_host, correct_dev, (size_t)rows * sizeof(int),
                              cudaMemcpyDeviceToHost, c->stream));
    cudaCheck(cudaStreamSynchronize(c->stream));
    double sum = 0.0;
    int right = 0;
    for (int r = 0; r < rows; r++)
        sum += loss_host[r], right += correct_host[r];
    if (correct) *correct = right;
    return sum;
}

static const device_ops cuda_ops = {
    .alloc = cu_alloc,
    .free = cu_free,
    .upload = cu_upload,
    .download = cu_download,
    .copy = cu_copy,
    .zero = cu_zero,
    .sync = cu_sync,
    .share_with_host = cu_share_with_host,
    .place = cu_place,
    .mark_create = cu_mark_create,
    .mark_record = cu_mark_record,
    .mark_seconds = cu_mark_seconds,
    .mark_destroy = cu_mark_destroy,
    .gemm = cu_gemm,
    .bias_add = cu_bias_add,
    .bias_grad = cu_bias_grad,
    .relu_fwd = cu_relu_fwd,
    .relu_bwd = cu_relu_bwd,
    .im2col = cu_im2col,
    .conv_implicit = cu_conv_implicit,
    .conv_implicit_dx = cu_conv_implicit_dx,
    .conv_implicit_dw = cu_conv_implicit_dw,
    .col2im = cu_col2im,
    .maxpool_fwd = cu_maxpool_fwd,
    .maxpool_bwd = cu_maxpool_bwd,
    .bn_fwd_train = cu_bn_fwd_train,
    .bn_fwd_infer = cu_bn_fwd_infer,
    .bn_bwd = cu_bn_bwd,
    .avgpool_fwd = cu_avgpool_fwd,
    .avgpool_bwd = cu_avgpool_bwd,
    .shortcut_fwd = cu_shortcut_fwd,
    .shortcut_bwd = cu_shortcut_bwd,
    .softmax_xent = cu_softmax_xent,
    .sgd = cu_sgd,
    .gemm_batched = cu_gemm_batched,
    .ln_fwd = cu_ln_fwd,
    .ln_bwd = cu_ln_bwd,
    .gelu_fwd = cu_gelu_fwd,
    .gelu_bwd = cu_gelu_bwd,
    .embed_fwd = cu_embed_fwd,
    .embed_bwd = cu_embed_bwd,
    .attn_softmax_fwd = cu_attn_softmax_fwd,
    .attn_softmax_bwd = cu_attn_softmax_bwd,
    .dropout = cu_dropout,
    .xent_tokens = cu_xent_tokens,
    .axpy = cu_axpy,
    .scale = cu_scale,
    .mean = cu_mean,
    .nrm2 = cu_nrm2,
    .masked_copy = cu_masked_copy,
    .lanes_reserve = cu_lanes_reserve,
    .memory_info = cu_memory_info,
    .lane_enter = cu_lane_enter,
    .lane_leave = cu_lane_leave,
    .close = cu_close,
};

int device_cuda_probe(char *reason, size_t reason_size) {
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count < 1) {
        if (reason && reason_size)
            snprintf(reason, reason_size, "%s",
                     err != cudaSuccess ? cudaGetErrorString(err) : "no CUDA device found");
        return 0;
    }
    if (reason && reason_size) reason[0] = '\0';
    return 1;
}

int device_cuda_init(device *dev, char *reason, size_t reason_size) {
    struct cudaDeviceProp prop;
    cudaError_t err = cudaSetDevice(0);
    if (err == cudaSuccess) err = cudaGetDeviceProperties(&prop, 0);
    if (err != cudaSuccess) {
        snprintf(reason, reason_size, "%s", cudaGetErrorString(err));
        return SS_EDEVICE;
    }
    cuda_ctx *c = ss_calloc(1, sizeof *c);
    cuda_lane *l0 = lane_create(reason, reason_size);
    if (!l0) {
        free(c);
        return SS_EDEVICE;
    }
    c->lanes[0] = l0;
    c->n_lanes = 1;
    c->conv_mode = conv_mode_of_env();
    dev->ops = &cuda_ops;
    dev->kind = DEVICE_KIND_CUDA;
    dev->ctx = c;
    snprintf(dev->name, sizeof dev->name, "cuda (%.100s)", prop.name);
    return SS_OK;
}
