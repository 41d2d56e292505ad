/* The shortcut of a residual block (shortcut_geom, device_impl.h): forward adds the subsampled
 * skip input into its channels of the output, one thread per added element; backward writes
 * every element of the skip's gradient (dy where sampled, 0 elsewhere). I: the index type, 32
 * bits where both tensors fit (cuda_index32): an element's 64-bit divisions cost more than its
 * memory traffic. */
#include "kernels/cuda_ops.h"

template <typename I>
static __global__ void shortcut_fwd_kernel(shortcut_geom g, I n, const float *x, float *y) {
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        const I c = i % (I)g.in_c, pix = i / (I)g.in_c;
        const I ow = pix % (I)g.out_w, rest = pix / (I)g.out_w;
        const I oh = rest % (I)g.out_h, b = rest / (I)g.out_h;
        const I src = ((b * g.in_h + oh * g.stride) * g.in_w + ow * g.stride) * g.in_c + c;
        const I dst = pix * g.out_c + g.c_lo + c;
        y[dst] = __fadd_rn(y[dst], x[src]);
    }
}

template <typename I>
static __global__ void shortcut_bwd_kernel(shortcut_geom g, I n, const float *dy, float *dx) {
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        const I c = i % (I)g.in_c, pix = i / (I)g.in_c;
        const I iw = pix % (I)g.in_w, rest = pix / (I)g.in_w;
        const I ih = rest % (I)g.in_h, b = rest / (I)g.in_h;
        const I oh = ih / (I)g.stride, ow = iw / (I)g.stride;
        float v = 0.0f;
        if (ih % (I)g.stride == 0 && iw % (I)g.stride == 0 && oh < (I)g.out_h && ow < (I)g.out_w)
            v = dy[((b * g.out_h + oh) * g.out_w + ow) * g.out_c + g.c_lo + c];
        dx[i] = v;
    }
}

/* whether every index of x (the skip input) and y (the block's output) counts in 32 bits */
static int shortcut_index32(shortcut_geom g) {
    const size_t in = (size_t)g.batch * g.in_h * g.in_w * g.in_c;
    const size_t out = (size_t)g.batch * g.out_h * g.out_w * g.out_c;
    return cuda_index32(in > out ? in : out);
}

void cuda_shortcut_fwd(cudaStream_t stream, shortcut_geom g, const float *x, float *y) {
    const size_t n = (size_t)g.batch * g.out_h * g.out_w * g.in_c;
    const unsigned n32 = (unsigned)n;
    if (shortcut_index32(g))
        shortcut_fwd_kernel<unsigned><<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(g, n32, x, y);
    else
        shortcut_fwd_kernel<size_t><<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(g, n, x, y);
    cudaCheck(cudaGetLastError());
}

void cuda_shortcut_bwd(cudaStream_t stream, shortcut_geom g, const float *dy, float *dx) {
    const size_t n = (size_t)g.batch * g.in_h * g.in_w * g.in_c;
    const unsigned n32 = (unsigned)n;
    if (shortcut_index32(g))
        shortcut_bwd_kernel<unsigned><<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(g, n32, dy, dx);
    else
        shortcut_bwd_kernel<size_t><<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(g, n, dy, dx);
    cudaCheck(cudaGetLastError());
}
