/* Softmax cross-entropy, one thread per sample (K is small: 10 to 100 classes). */
#include "kernels/cuda_ops.h"

static __global__ void softmax_xent_kernel(int batch, int classes, const float *logits,
                                           const uint8_t *labels, float *dlogits, double *loss_rows,
                                           int *correct_rows) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batch) return;
    const float *z = logits + (size_t)b * classes;
    int arg = 0;
    for (int k = 1; k < classes; k++)
        if (z[k] > z[arg]) arg = k;
    float zmax = z[arg];
    double sum = 0.0;
    for (int k = 0; k < classes; k++)
        sum += exp((double)(z[k] - zmax));
    int y = labels[b];
    loss_rows[b] = log(sum) - (double)(z[y] - zmax);
    correct_rows[b] = arg == y;
    if (dlogits) {
        float *d = dlogits + (size_t)b * classes;
        float inv_sum = (float)(1.0 / sum), inv_batch = 1.0f / (float)batch;
        for (int k = 0; k < classes; k++) {
            float p = expf(z[k] - zmax) * inv_sum;
            d[k] = (p - (k == y ? 1.0f : 0.0f)) * inv_batch;
        }
    }
}

void cuda_softmax_xent(cudaStream_t stream, int batch, int classes, const float *logits,
                       const uint8_t *labels, float *dlogits, double *loss_rows,
                       int *correct_rows) {
    int block = 128;
    softmax_xent_kernel<<<(batch + block - 1) / block, block, 0, stream>>>(
        batch, classes, logits, labels, dlogits, loss_rows, correct_rows);
    cudaCheck(cudaGetLastError());
}
