/* The shortcut of a residual block (shortcut_geom, device_impl.h): forward adds the subsampled
 * skip input into its channels of the output, one thread per added element; backward writes
 * every element of the skip's gradient (dy where sampled, 0 elsewhere). */
#include "kernels/cuda_ops.h"

static __global__ void shortcut_fwd_kernel(shortcut_geom g, const float *x, float *y) {
    const size_t n = (size_t)g.batch * g.out_h * g.out_w * g.in_c;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        int c = (int)(i % g.in_c);
        size_t pix = i / g.in_c;
        int ow = (int)(pix % g.out_w), oh = (int)((pix / g.out_w) % g.out_h);
        size_t b = pix / ((size_t)g.out_w * g.out_h);
        size_t src =
            ((b * g.in_h + (size_t)oh * g.stride) * g.in_w + (size_t)ow * g.stride) * g.in_c + c;
        size_t dst = pix * g.out_c + g.c_lo + c;
        y[dst] = __fadd_rn(y[dst], x[src]);
    }
}

static __global__ void shortcut_bwd_kernel(shortcut_geom g, const float *dy, float *dx) {
    const size_t n = (size_t)g.batch * g.in_h * g.in_w * g.in_c;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        int c = (int)(i % g.in_c);
        size_t pix = i / g.in_c;
        int iw = (int)(pix % g.in_w), ih = (int)((pix / g.in_w) % g.in_h);
        size_t b = pix / ((size_t)g.in_w * g.in_h);
        int oh = ih / g.stride, ow = iw / g.stride;
        float v = 0.0f;
        if (ih % g.stride == 0 && iw % g.stride == 0 && oh < g.out_h && ow < g.out_w)
            v = dy[((b * g.out_h + oh) * g.out_w + ow) * g.out_c + g.c_lo + c];
        dx[i] = v;
    }
}

void cuda_shortcut_fwd(cudaStream_t stream, shortcut_geom g, const float *x, float *y) {
    size_t n = (size_t)g.batch * g.out_h * g.out_w * g.in_c;
    shortcut_fwd_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(g, x, y);
    cudaCheck(cudaGetLastError());
}

void cuda_shortcut_bwd(cudaStream_t stream, shortcut_geom g, const float *dy, float *dx) {
    size_t n = (size_t)g.batch * g.in_h * g.in_w * g.in_c;
    shortcut_bwd_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(g, dy, dx);
    cudaCheck(cudaGetLastError());
}
