/* Internal to the direct convolution (kernels/conv_direct.c): the register tiles of each
 * instruction set (kernels/conv_direct_tiles.c), called through a tile_set by the drivers. */
#ifndef SS_KERNELS_CONV_DIRECT_TILES_H
#define SS_KERNELS_CONV_DIRECT_TILES_H

#include <stddef.h>

/* A window sliding over a padded NHWC image: output pixel r of a tile reads, for kernel row a,
 * the `run` contiguous floats in + a * row + r * px (kw pixels of all channels), and multiplies
 * float t of them by the weight vector w + (a * run + t) * ldw; over the kernel rows a0 <= a < a1
 * and the offsets t0 <= t < t1 (all of them, or those inside the image: skip_frame). */
typedef struct slide {
    const float *in;
    size_t row;
    int px, run;
    const float *w;
    int ldw;
    int a0, a1, t0, t1;
} slide;

/* Filter gradient tile: dwt rows t0 .. t0 + R - 1 (offsets within kernel row a), NV vectors of
 * output channels, accumulated over n_oh x n_ow output pixels of the samples onto what dwt holds
 * (or from 0). */
typedef struct filter_tile_args {
    const float *in; /* the input of the first pixel's first term (kernel row a, offset t0) */
    size_t row;      /* floats from one input row to the next */
    int px, n_oh, n_ow;
    const float *dy; /* the first pixel's output gradient at the tile's first channel */
    size_t dy_row;   /* floats from one output row to the next */
    int ldy;
    float *dwt; /* (t, o) at the tile's corner, ldy floats a row */
    int first;
    int samples;       /* consecutive samples, in order: */
    size_t s_in, s_dy; /* floats from one to the next in `in` and in `dy` */
} filter_tile_args;

/* Data-gradient tile of a strided convolution (conv_direct_data_strided): R input pixels a
 * stride apart along an input row (each one output column after the one before) and NV vectors
 * of their channels. Each output is one fused multiply-add chain over the taps, kernel rows ki[a]
 * ascending, then kernel columns kj[b] ascending, then the output channels o ascending, of
 * dy(oh[a], ow[b] + r, o) * wt(ki[a] kw + kj[b], o, c): the taps whose output pixel exists and
 * lies on the stride, the others left out. */
typedef struct strided_dx_tile {
    const float *dy; /* the sample's output gradient (out_h, out_w, oc) */
    const float *wt; /* the weights as (kh kw, oc, in_c), at the tile's first channel */
    int oc, in_c, out_w, kw;
    int n_rows, n_cols;
    const int *ki, *oh; /* (n_rows) the taps' kernel rows and their output rows */
    const int *kj, *ow; /* (n_cols) kernel columns and the tile's first pixel's output columns */
    float *out;         /* the tile's first pixel's input gradient at its first channel */
    size_t ldo;         /* floats from one pixel of the tile to the next */
} strided_dx_tile;

/* The register tiles of one instruction set. The drivers below split channels into blocks of
 * nv vectors (the largest of slide_nv_max or filter_nv_max, 2, 1 that fits) and pixels or filter
 * rows into runs of at most slide_pixels(nv) or filter_rows(nv). */
typedef struct tile_set {
    int lanes, slide_nv_max, filter_nv_max;
    int (*slide_pixels)(int nv);
    int (*filter_rows)(int nv);
    void (*slide)(const slide *s, int r_n, int nv, float *out, int ldo, const float *bias,
                  int relu);
    void (*filter)(const filter_tile_args *f, int r_n, int nv);
    int (*dx_pixels)(int nv); /* the most pixels of a strided_dx tile of nv vectors */
    void (*strided_dx)(const strided_dx_tile *t, int r_n, int nv);
    /* out[o * ldo + i] = blocks[0][i * ldi + o] + blocks[1][...] + ... (n blocks, added in that
     * order: a scalar loop's bits) for i, o < 16: a 16 x 16 tile of the ranges' filter gradients
     * summed and transposed (conv_direct.c's sum_part), in registers */
    void (*sum_transpose)(const float *const *blocks, int n, size_t ldi, float *out, size_t ldo);
} tile_set;

/* The largest of nv_max, 2 and 1 vectors that `left` vectors hold. */
static inline int tile_vectors(int nv_max, int left) {
    return left >= nv_max ? nv_max : left >= 2 ? 2 : 1;
}

/* AVX-512 (32 registers of 16 floats) and AVX2 with FMA (16 registers of 8 floats) */
extern const tile_set conv_tiles_512, conv_tiles_256;

/* The set the direct convolution uses here (conv_direct.c: the widest this CPU runs, within
 * conv_direct_cap_isa), or NULL where it runs none. */
const tile_set *conv_direct_tiles(void);
/* dst (cols, rows) = src (rows, cols) transposed (a copy: the same floats) */
void conv_direct_transpose(const float *src, size_t rows, size_t cols, float *dst);

#endif
