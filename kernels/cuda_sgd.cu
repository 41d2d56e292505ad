/* SGD with momentum (plain or Nesterov) and weight decay, PyTorch's form (see optim.h). */
#include "kernels/cuda_ops.h"

static __global__ void sgd_kernel(size_t n, float *w, const float *g, float *v, float lr, float mu,
                                  float wd, int nesterov) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float gi = g[i] + wd * w[i];
        if (mu != 0.0f) {
            float vi = mu * v[i] + gi;
            v[i] = vi;
            gi = nesterov ? gi + mu * vi : vi;
        }
        w[i] -= lr * gi;
    }
}

void cuda_sgd(cudaStream_t stream, size_t n, float *w, const float *g, float *v, float lr, float mu,
              float wd, int nesterov) {
    sgd_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n, w, g, v, lr, mu, wd, nesterov);
    cudaCheck(cudaGetLastError());
}
