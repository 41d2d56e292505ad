/* The language model's softmax cross-entropy: a block a row of V logits (V up to 2^24). The
 * argmax keeps the first maximum (the lowest index among equals), as the CPU's loop does; the
 * sum of exponentials is in double, over a fixed stride and tree. dlogits may alias logits: every
 * read of a row ends at a barrier before its first write. */
#include "kernels/cuda_ops.h"

enum { XT_THREADS = 256 };

static __global__ void xent_tokens_kernel(int vocab, const float *logits, const float *tokens,
                                          int ld, int t, float inv_rows, float *dlogits,
                                          double *loss_rows, int *correct_rows) {
    __shared__ float smax[XT_THREADS];
    __shared__ int sarg[XT_THREADS];
    __shared__ double ssum[XT_THREADS];
    const size_t r = blockIdx.x;
    const float *z = logits + r * vocab;
    const int y = (int)tokens[(r / t) * ld + r % t + 1];
    float best = -INFINITY;
    int arg = vocab;
    for (int k = threadIdx.x; k < vocab; k += XT_THREADS)
        if (z[k] > best) best = z[k], arg = k; /* ascending k: the first maximum of the lane */
    smax[threadIdx.x] = best, sarg[threadIdx.x] = arg;
    __syncthreads();
    for (int half = XT_THREADS / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half) {
            float ob = smax[threadIdx.x + half];
            int oa = sarg[threadIdx.x + half];
            if (ob > smax[threadIdx.x] || (ob == smax[threadIdx.x] && oa < sarg[threadIdx.x]))
                smax[threadIdx.x] = ob, sarg[threadIdx.x] = oa;
        }
        __syncthreads();
    }
    const float zmax = smax[0], zy = z[y];
    double s = 0.0;
    for (int k = threadIdx.x; k < vocab; k += XT_THREADS)
        s += exp((double)__fsub_rn(z[k], zmax));
    ssum[threadIdx.x] = s;
    __syncthreads();
    for (int half = XT_THREADS / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half) ssum[threadIdx.x] += ssum[threadIdx.x + half];
        __syncthreads();
    }
    const double sum = ssum[0];
    if (threadIdx.x == 0) {
        loss_rows[r] = log(sum) - (double)__fsub_rn(zy, zmax);
        correct_rows[r] = sarg[0] == y;
    }
    if (!dlogits) return;
    const float inv_s = (float)(1.0 / sum);
    float *dz = dlogits + r * vocab;
    for (int k = threadIdx.x; k < vocab; k += XT_THREADS) {
        float p = __fmul_rn(expf(__fsub_rn(z[k], zmax)), inv_s);
        dz[k] = __fmul_rn(__fsub_rn(p, k == y ? 1.0f : 0.0f), inv_rows);
    }
}

void cuda_xent_tokens(cudaStream_t stream, int rows, int vocab, const float *logits,
                      const float *tokens, int ld, int t, float *dlogits, double *loss_rows,
                      int *correct_rows) {
    xent_tokens_kernel<<<rows, XT_THREADS, 0, stream>>>(
        vocab, logits, tokens, ld, t, 1.0f / (float)rows, dlogits, loss_rows, correct_rows);
    cudaCheck(cudaGetLastError());
}
