/* Token and position embeddings. The backward pass gives each thread one column of the
 * embedding and walks the rows of dy in order, so that rows with the same token add in the CPU
 * reference's order without atomics (deterministic, and equal to the CPU bit for bit). */
#include "kernels/cuda_ops.h"

static __global__ void embed_fwd_kernel(int batch, int t, int d, const float *tokens, int ld,
                                        const float *wte, float scale, const float *pos, float *y) {
    const size_t n = (size_t)batch * t * d;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t row = i / d;
        const int c = (int)(i % d), j = (int)(row % t), b = (int)(row / t);
        const size_t tok = (size_t)tokens[(size_t)b * ld + j];
        float v = __fmul_rn(scale, wte[tok * d + c]);
        y[i] = __fadd_rn(v, pos ? pos[(size_t)j * d + c] : 0.0f);
    }
}

static __global__ void embed_dwte_kernel(int batch, int t, int d, const float *tokens, int ld,
                                         const float *dy, float scale, float *dwte) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= d) return;
    for (int b = 0; b < batch; b++)
        for (int j = 0; j < t; j++) {
            const size_t tok = (size_t)tokens[(size_t)b * ld + j];
            float *e = dwte + tok * d + c;
            *e = __fadd_rn(*e, __fmul_rn(scale, dy[((size_t)b * t + j) * d + c]));
        }
}

static __global__ void embed_dpos_kernel(int batch, int t, int d, const float *dy, float *dpos) {
    const size_t n = (size_t)t * d;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float s = 0.0f;
        for (int b = 0; b < batch; b++)
            s = __fadd_rn(s, dy[(size_t)b * n + i]);
        dpos[i] = s;
    }
}

void cuda_embed_fwd(cudaStream_t stream, int batch, int t, int d, const float *tokens, int ld,
                    const float *wte, float scale, const float *pos, float *y) {
    size_t n = (size_t)batch * t * d;
    embed_fwd_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(batch, t, d, tokens, ld, wte, scale,
                                                              pos, y);
    cudaCheck(cudaGetLastError());
}

void cuda_embed_bwd(cudaStream_t stream, int batch, int t, int d, const float *tokens, int ld,
                    const float *dy, float scale, int vocab, int accumulate, float *dwte,
                    float *dpos) {
    if (!accumulate) cudaCheck(cudaMemsetAsync(dwte, 0, (size_t)vocab * d * sizeof(float), stream));
    const int block = 64;
    embed_dwte_kernel<<<(d + block - 1) / block, block, 0, stream>>>(batch, t, d, tokens, ld, dy,
                                                                     scale, dwte);
    cudaCheck(cudaGetLastError());
    if (!dpos) return;
    size_t n = (size_t)t * d;
    embed_dpos_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(batch, t, d, dy, dpos);
    cudaCheck(cudaGetLastError());
}
