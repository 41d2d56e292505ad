/* Batch normalization per column of (rows, cols) (NHWC: rows = B*H*W, cols = C), and the bias
 * gradient (the same column sums).
 *
 * The sums over rows run in two stages with a fixed order, so no atomics and results that do not
 * depend on scheduling: the rows are cut into at most BN_ROW_BLOCKS blocks (a partition fixed by
 * rows alone), and a thread block sums its block of rows for a tile of up to 32 columns, its
 * threads reading consecutive columns (coalesced; one block a column read a strided column from
 * one multiprocessor) and each row lane adding its rows in double, then the lanes in a tree in
 * shared memory; a second kernel adds the row blocks' partial sums in order, one thread a
 * column. */
#include "kernels/cuda_ops.h"

enum { BN_THREADS = 256, BN_TILE = 32, BN_ROW_BLOCKS = 256 };

/* What a partial-sum pass adds for element (r, c): x, (x - mean)^2, or dy and dy xhat */
enum { BN_SUM_X = 0, BN_SUM_SQ = 1, BN_SUM_GRAD = 2 };

/* Rows a row block takes: ceil(rows / blocks) for blocks = min(BN_ROW_BLOCKS, ceil(rows / 256)) */
static int bn_rows_per_block(int rows) {
    int blocks = (rows + 255) / 256;
    if (blocks > BN_ROW_BLOCKS) blocks = BN_ROW_BLOCKS;
    if (blocks < 1) blocks = 1;
    return (rows + blocks - 1) / blocks;
}

/* partial[(rb * cols + c) * 2 + k]: sum k (k = 0, and 1 for the gradient's dy xhat) of row block
 * rb over column c. Grid (row blocks, column tiles). */
template <int MODE>
static __global__ void bn_partial_kernel(int rows, int cols, int rpb, const float *x,
                                         const float *dy, const float *mean, const float *invstd,
                                         double *partial) {
    __shared__ double sh[2][BN_THREADS];
    const int c0 = blockIdx.y * BN_TILE;
    const int tw = cols - c0 < BN_TILE ? cols - c0 : BN_TILE; /* columns of this tile */
    const int lanes = BN_THREADS / tw;
    const int t = threadIdx.x, lane = t / tw, c = c0 + t % tw;
    const int r0 = blockIdx.x * rpb, r1 = r0 + rpb < rows ? r0 + rpb : rows;
    double a = 0.0, b = 0.0;
    if (lane < lanes) {
        const double m = MODE == BN_SUM_X ? 0.0 : (double)mean[c];
        const double is = MODE == BN_SUM_GRAD ? (double)invstd[c] : 0.0;
        for (int r = r0 + lane; r < r1; r += lanes) {
            const size_t i = (size_t)r * cols + c;
            if (MODE == BN_SUM_X) {
                a += x[i];
            } else if (MODE == BN_SUM_SQ) {
                double d = (double)x[i] - m;
                a += d * d;
            } else {
                double xhat = ((double)x[i] - m) * is;
                a += dy[i];
                b += dy[i] * xhat;
            }
        }
    }
    sh[0][t] = a;
    sh[1][t] = b;
    __syncthreads();
    /* lanes 0 .. lanes-1 of each column, added in a fixed tree (lanes is a power of two only
     * when tw is: a plain halving over the lane count, the odd one out added by lane 0) */
    for (int n = lanes; n > 1;) {
        const int half = (n + 1) / 2;
        if (lane < n / 2) {
            sh[0][t] += sh[0][t + half * tw];
            sh[1][t] += sh[1][t + half * tw];
        }
        __syncthreads();
        n = half;
    }
    if (lane == 0) {
        double *p = partial + ((size_t)blockIdx.x * cols + c) * 2;
        p[0] = sh[0][t];
        p[1] = sh[1][t];
    }
}

/* Sums of the row blocks, in order, for column c */
static __device__ void bn_total(const double *partial, int blocks, int cols, int c, double *a,
                                double *b) {
    double sa = 0.0, sb = 0.0;
    for (int k = 0; k < blocks; k++) {
        sa += partial[((size_t)k * cols + c) * 2];
        sb += partial[((size_t)k * cols + c) * 2 + 1];
    }
    *a = sa, *b = sb;
}

static __global__ void bn_mean_kernel(int rows, int cols, int blocks, const double *partial,
                                      float *save_mean) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    double s, unused;
    bn_total(partial, blocks, cols, c, &s, &unused);
    save_mean[c] = (float)(s / rows);
}

static __global__ void bn_var_kernel(int rows, int cols, int blocks, const double *partial,
                                     float momentum, float eps, float *run_mean, float *run_var,
                                     const float *save_mean, float *save_invstd) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    double s, unused;
    bn_total(partial, blocks, cols, c, &s, &unused);
    const double var = s / rows;
    save_invstd[c] = (float)(1.0 / sqrt(var + eps));
    double unbiased = rows > 1 ? var * rows / (rows - 1) : var;
    run_mean[c] = (float)((1.0 - momentum) * run_mean[c] + momentum * (double)save_mean[c]);
    run_var[c] = (float)((1.0 - momentum) * run_var[c] + momentum * unbiased);
}

static __global__ void bn_grad_total_kernel(int cols, int blocks, const double *partial,
                                            float *dgamma, float *dbeta) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    double sdy, sdyx;
    bn_total(partial, blocks, cols, c, &sdy, &sdyx);
    dgamma[c] = (float)sdyx;
    dbeta[c] = (float)sdy;
}

/* db[c] = beta db[c] + the column's sum (in double, rounded once) */
static __global__ void bias_grad_total_kernel(int cols, int blocks, const double *partial,
                                              float beta, float *db) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    double s, unused;
    bn_total(partial, blocks, cols, c, &s, &unused);
    db[c] = (float)(beta != 0.0f ? s + (double)beta * db[c] : s);
}

size_t cuda_bn_partial_doubles(int rows, int cols) {
    const int rpb = bn_rows_per_block(rows);
    return (size_t)((rows + rpb - 1) / rpb) * cols * 2;
}

template <int MODE>
static int bn_partials(cudaStream_t stream, int rows, int cols, const float *x, const float *dy,
                       const float *mean, const float *invstd, double *partial) {
    const int rpb = bn_rows_per_block(rows), blocks = (rows + rpb - 1) / rpb;
    dim3 grid(blocks, (cols + BN_TILE - 1) / BN_TILE);
    bn_partial_kernel<MODE>
        <<<grid, BN_THREADS, 0, stream>>>(rows, cols, rpb, x, dy, mean, invstd, partial);
    cudaCheck(cudaGetLastError());
    return blocks;
}

/* y = x scale + shift with scale = gamma invstd, shift = beta - mean scale, as the CPU forms
 * them in float */
static __global__ void bn_apply_kernel(size_t n, int cols, const float *x, const float *gamma,
                                       const float *beta, const float *mean, const float *invstd,
                                       int from_var, float eps, float *y) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        int c = (int)(i % cols);
        float is = from_var ? (float)(1.0 / sqrt((double)invstd[c] + eps)) : invstd[c];
        float scale = __fmul_rn(gamma[c], is);
        float shift = __fsub_rn(beta[c], __fmul_rn(mean[c], scale));
        y[i] = __fadd_rn(__fmul_rn(x[i], scale), shift);
    }
}

/* dx = gamma invstd (dy - sum_dy / rows - xhat sum_dyxhat / rows); the sums are dbeta, dgamma
 * as doubles rounded to float, as on the CPU up to that rounding */
static __global__ void bn_dx_kernel(size_t n, int rows, int cols, const float *x, const float *dy,
                                    const float *gamma, const float *save_mean,
                                    const float *save_invstd, const float *dgamma,
                                    const float *dbeta, float *dx) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        int c = (int)(i % cols);
        float k = __fmul_rn(gamma[c], save_invstd[c]);
        float a = (float)((double)dbeta[c] / rows), b = (float)((double)dgamma[c] / rows);
        float xhat = __fmul_rn(__fsub_rn(x[i], save_mean[c]), save_invstd[c]);
        dx[i] = __fmul_rn(k, __fsub_rn(__fsub_rn(dy[i], a), __fmul_rn(xhat, b)));
    }
}

void cuda_bn_fwd_train(cudaStream_t stream, int rows, int cols, const float *x, const float *gamma,
                       const float *beta, float momentum, float eps, float *run_mean,
                       float *run_var, float *save_mean, float *save_invstd, double *partial,
                       float *y) {
    const unsigned col_blocks = (unsigned)(cols + BN_THREADS - 1) / BN_THREADS;
    int blocks = bn_partials<BN_SUM_X>(stream, rows, cols, x, NULL, NULL, NULL, partial);
    bn_mean_kernel<<<col_blocks, BN_THREADS, 0, stream>>>(rows, cols, blocks, partial, save_mean);
    cudaCheck(cudaGetLastError());
    bn_partials<BN_SUM_SQ>(stream, rows, cols, x, NULL, save_mean, NULL, partial);
    bn_var_kernel<<<col_blocks, BN_THREADS, 0, stream>>>(rows, cols, blocks, partial, momentum, eps,
                                                         run_mean, run_var, save_mean, save_invstd);
    cudaCheck(cudaGetLastError());
    size_t n = (size_t)rows * cols;
    bn_apply_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n, cols, x, gamma, beta, save_mean,
                                                             save_invstd, 0, eps, y);
    cudaCheck(cudaGetLastError());
}

void cuda_bn_fwd_infer(cudaStream_t stream, int rows, int cols, const float *x, const float *gamma,
                       const float *beta, const float *run_mean, const float *run_var, float eps,
                       float *y) {
    size_t n = (size_t)rows * cols;
    bn_apply_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n, cols, x, gamma, beta, run_mean,
                                                             run_var, 1, eps, y);
    cudaCheck(cudaGetLastError());
}

void cuda_bn_bwd(cudaStream_t stream, int rows, int cols, const float *x, const float *dy,
                 const float *gamma, const float *save_mean, const float *save_invstd,
                 double *partial, float *dgamma, float *dbeta, float *dx) {
    const unsigned col_blocks = (unsigned)(cols + BN_THREADS - 1) / BN_THREADS;
    int blocks =
        bn_partials<BN_SUM_GRAD>(stream, rows, cols, x, dy, save_mean, save_invstd, partial);
    bn_grad_total_kernel<<<col_blocks, BN_THREADS, 0, stream>>>(cols, blocks, partial, dgamma,
                                                                dbeta);
    cudaCheck(cudaGetLastError());
    if (!dx) return;
    size_t n = (size_t)rows * cols;
    bn_dx_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n, rows, cols, x, dy, gamma, save_mean,
                                                          save_invstd, dgamma, dbeta, dx);
    cudaCheck(cudaGetLastError());
}

void cuda_bias_grad(cudaStream_t stream, int rows, int cols, const float *dy, float beta,
                    double *partial, float *db) {
    int blocks = bn_partials<BN_SUM_X>(stream, rows, cols, dy, NULL, NULL, NULL, partial);
    bias_grad_total_kernel<<<(unsigned)(cols + BN_THREADS - 1) / BN_THREADS, BN_THREADS, 0,
                             stream>>>(cols, blocks, partial, beta, db);
    cudaCheck(cudaGetLastError());
}
