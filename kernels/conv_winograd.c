/* F(4 x 4, 3 x 3) Winograd convolutions on the CPU (conv_winograd.h). The transforms' matrices
 * are those of Lavin and Gray (arXiv:1509.09308, section 4.2): with the 6 points 0, 1, -1, 2, -2
 * and infinity,
 *   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
 *   G   = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
 *   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
 * Each transform runs on 16 channels at once (NHWC keeps them side by side); the 36 positions of
 * a transformed tile go to 36 planes, each plane a row-major matrix (tiles, channels) that one
 * product reads (the direct convolution's register tiles, or the BLAS where the CPU has none). */
#include "kernels/conv_winograd.h"

#include "common/status.h"
#include "kernels/conv_direct_tiles.h"
#include "kernels/cpu_par.h"
#include "kernels/cpu_vec.h"

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum {
    WG_POS = 36,  /* positions of a transformed tile (6 x 6) */
    WG_LANES = 16 /* channels a transform takes at once */
};

static int wg_enabled = 1;
/* tiles of a chunk of samples, about: the products' rows */
static int wg_chunk_tiles = CONV_WINOGRAD_CHUNK_TILES;

void conv_winograd_set_chunk_tiles(int tiles) {
    wg_chunk_tiles = tiles > 0 ? tiles : CONV_WINOGRAD_CHUNK_TILES;
}

void conv_winograd_enable(int on) {
    wg_enabled = on != 0;
}

static int tiles_of(int n) {
    return (n + 3) / 4;
}

int conv_winograd_supports(const conv_geom *g, int oc) {
    if (!(wg_enabled && g->kh == 3 && g->kw == 3 && conv_stride(g) == 1 && g->pad == 1 &&
          g->out_h == g->in_h && g->out_w == g->in_w && g->in_h >= 6 && g->in_w >= 6 &&
          g->in_c % WG_LANES == 0 && oc % WG_LANES == 0 && g->in_c > 0 && oc > 0))
        return 0;
    return conv_direct_tiles() || (g->in_c >= 32 && oc >= 32 && (long)g->in_c * oc >= 64 * 128);
}

/* samples a full chunk holds: about wg_chunk_tiles tiles, at least one sample */
static int full_chunk(const conv_geom *g) {
    const int s = wg_chunk_tiles / (tiles_of(g->out_h) * tiles_of(g->out_w));
    return s > 1 ? s : 1;
}

/* samples a chunk of g's batch holds: a full chunk, or the batch when it is smaller */
static int chunk_samples(const conv_geom *g) {
    const int s = full_chunk(g);
    return s < g->batch ? s : g->batch > 0 ? g->batch : 1;
}

/* the workspace: U and S (36 x oc x in_c each), V and M (36 x chunk tiles x the wider side) */
typedef struct wg_space {
    float *u, *s, *v, *m;
} wg_space;

/* a full chunk's, whatever the batch: the memory estimate (emu/) grows linearly with it */
static size_t chunk_floats(const conv_geom *g, int oc) {
    const size_t tiles = (size_t)full_chunk(g) * tiles_of(g->out_h) * tiles_of(g->out_w);
    return WG_POS * tiles * (size_t)(g->in_c > oc ? g->in_c : oc);
}

size_t conv_winograd_workspace_floats(const conv_geom *g, int oc) {
    return 2 * (WG_POS * (size_t)oc * g->in_c + chunk_floats(g, oc));
}

static wg_space space_of(const conv_geom *g, int oc, float *ws) {
    const size_t w = WG_POS * (size_t)oc * g->in_c, c = chunk_floats(g, oc);
    return (wg_space){ws, ws + w, ws + 2 * w, ws + 2 * w + c};
}

/* ---- the 1-D transforms, 16 lanes each: element k of a vector at in + k * is ---- */

/* B^T: 6 -> 6 */
SS_INLINE void bt_lanes(const float *restrict in, size_t is, float *restrict out, size_t os) {
    for (int l = 0; l < WG_LANES; l++) {
        const float i0 = in[l], i1 = in[is + l], i2 = in[2 * is + l], i3 = in[3 * is + l];
        const float i4 = in[4 * is + l], i5 = in[5 * is + l];
        const float a = i4 - 4.0f * i2, b = i3 - 4.0f * i1;
        const float c = i4 - i2, d = 2.0f * (i3 - i1);
        out[l] = 4.0f * i0 - 5.0f * i2 + i4;
        out[os + l] = a + b;
        out[2 * os + l] = a - b;
        out[3 * os + l] = c + d;
        out[4 * os + l] = c - d;
        out[5 * os + l] = 4.0f * i1 - 5.0f * i3 + i5;
    }
}

/* A^T: 6 -> 4 */
SS_INLINE void at_lanes(const float *restrict in, size_t is, float *restrict out, size_t os) {
    for (int l = 0; l < WG_LANES; l++) {
        const float i0 = in[l], i1 = in[is + l], i2 = in[2 * is + l], i3 = in[3 * is + l];
        const float i4 = in[4 * is + l], i5 = in[5 * is + l];
        const float p = i1 + i2, q = i1 - i2, r = i3 + i4, s = i3 - i4;
        out[l] = i0 + p + r;
        out[os + l] = q + 2.0f * s;
        out[2 * os + l] = p + 4.0f * r;
        out[3 * os + l] = q + 8.0f * s + i5;
    }
}

/* A: 4 -> 6 (an output gradient tile into the transformed space) */
SS_INLINE void a_lanes(const float *restrict in, size_t is, float *restrict out, size_t os) {
    for (int l = 0; l < WG_LANES; l++) {
        const float i0 = in[l], i1 = in[is + l], i2 = in[2 * is + l], i3 = in[3 * is + l];
        const float e = i0 + i2, o = i1 + i3, e4 = i0 + 4.0f * i2, o8 = 2.0f * i1 + 8.0f * i3;
        out[l] = i0;
        out[os + l] = e + o;
        out[2 * os + l] = e - o;
        out[3 * os + l] = e4 + o8;
        out[4 * os + l] = e4 - o8;
        out[5 * os + l] = i3;
    }
}

/* G: 3 -> 6 (a kernel into the transformed space) */
SS_INLINE void g_lanes(const float *restrict in, size_t is, float *restrict out, size_t os) {
    for (int l = 0; l < WG_LANES; l++) {
        const float i0 = in[l], i1 = in[is + l], i2 = in[2 * is + l];
        const float p = i0 + i2, q = i0 * (1.0f / 24.0f) + i2 * (1.0f / 6.0f);
        const float r = i1 * (1.0f / 12.0f);
        out[l] = i0 * 0.25f;
        out[os + l] = -(p + i1) * (1.0f / 6.0f);
        out[2 * os + l] = -(p - i1) * (1.0f / 6.0f);
        out[3 * os + l] = q + r;
        out[4 * os + l] = q - r;
        out[5 * os + l] = i2;
    }
}

/* G^T: 6 -> 3 (a transformed filter gradient back to the kernel's 3 taps) */
SS_INLINE void gt_lanes(const float *restrict in, size_t is, float *restrict out, size_t os) {
    for (int l = 0; l < WG_LANES; l++) {
        const float i0 = in[l], i1 = in[is + l], i2 = in[2 * is + l], i3 = in[3 * is + l];
        const float i4 = in[4 * is + l], i5 = in[5 * is + l];
        const float s12 = i1 + i2, d12 = i2 - i1, s34 = i3 + i4, d34 = i3 - i4;
        out[l] = i0 * 0.25f - s12 * (1.0f / 6.0f) + s34 * (1.0f / 24.0f);
        out[os + l] = d12 * (1.0f / 6.0f) + d34 * (1.0f / 12.0f);
        out[2 * os + l] = (s34 - s12) * (1.0f / 6.0f) + i5;
    }
}

/* the 36 positions of a transformed block (6, 6, 16 lanes) into their planes, `plane` apart */
SS_INLINE void store_planes(float (*v)[6][WG_LANES], float *dst, size_t plane) {
    for (int k = 0; k < WG_POS; k++)
        memcpy(dst + (size_t)k * plane, v[k / 6][k % 6], sizeof v[0][0]);
}

/* ---- a chunk's tiles: tile t is sample t / per, row (t % per) / tw, column (t % per) % tw ---- */

typedef struct tile_job {
    const float *src; /* input transforms: the chunk's first sample (h, w, c) */
    float *dst;       /* output transform: the chunk's first sample */
    const float *planes;
    float *out_planes;
    size_t plane; /* floats of a plane: chunk tiles x c */
    int h, w, c, tw, per;
    const float *bias; /* output transform: added, or NULL */
    int relu;
} tile_job;

/* The n x n pixels (16 channels from c0 each) of tile t's patch from `back` pixels above and
 * left of its first output pixel, into d (n, n, 16): zeros outside the image. */
SS_INLINE void load_patch(const tile_job *j, size_t t, int back, int n, int c0, float *d) {
    const int s = (int)(t / j->per), r = (int)(t % j->per);
    const int y0 = 4 * (r / j->tw) - back, x0 = 4 * (r % j->tw) - back;
    const float *base = j->src + (size_t)s * j->h * j->w * j->c + c0;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            const int iy = y0 + a, ix = x0 + b;
            float *lanes = d + (size_t)(a * n + b) * WG_LANES;
            if (iy < 0 || iy >= j->h || ix < 0 || ix >= j->w)
                memset(lanes, 0, WG_LANES * sizeof(float));
            else
                memcpy(lanes, base + ((size_t)iy * j->w + ix) * j->c, WG_LANES * sizeof(float));
        }
}

/* V = B^T d B of each tile's 6 x 6 input patch (rows 4 ty - 1 .., columns 4 tx - 1 ..) */
static SS_CPU_CLONES void input_tiles(void *ctx, size_t t0, size_t t1) {
    const tile_job *j = ctx;
    float d[6][6][WG_LANES], u[6][6][WG_LANES];
    for (size_t t = t0; t < t1; t++) {
        for (int c0 = 0; c0 < j->c; c0 += WG_LANES) {
            load_patch(j, t, 1, 6, c0, d[0][0]);
            for (int b = 0; b < 6; b++)
                bt_lanes(d[0][b], 6 * WG_LANES, u[0][b], 6 * WG_LANES);
            for (int k = 0; k < 6; k++)
                bt_lanes(u[k][0], WG_LANES, d[k][0], WG_LANES);
            store_planes(d, j->out_planes + t * j->c + c0, j->plane);
        }
    }
}

/* dM = A dY A^T of each tile's 4 x 4 output gradient (zeros outside the image) */
static SS_CPU_CLONES void grad_tiles(void *ctx, size_t t0, size_t t1) {
    const tile_job *j = ctx;
    float d[4][4][WG_LANES], u[6][4][WG_LANES], v[6][6][WG_LANES];
    for (size_t t = t0; t < t1; t++) {
        for (int c0 = 0; c0 < j->c; c0 += WG_LANES) {
            load_patch(j, t, 0, 4, c0, d[0][0]);
            for (int b = 0; b < 4; b++)
                a_lanes(d[0][b], 4 * WG_LANES, u[0][b], 4 * WG_LANES);
            for (int k = 0; k < 6; k++)
                a_lanes(u[k][0], WG_LANES, v[k][0], WG_LANES);
            store_planes(v, j->out_planes + t * j->c + c0, j->plane);
        }
    }
}

/* Y = A^T M A of each tile, the pixels inside the image stored (+ bias, ReLU) */
static SS_CPU_CLONES void output_tiles(void *ctx, size_t t0, size_t t1) {
    const tile_job *j = ctx;
    float m[6][6][WG_LANES], u[4][6][WG_LANES], y[4][4][WG_LANES];
    for (size_t t = t0; t < t1; t++) {
        const int s = (int)(t / j->per), r = (int)(t % j->per);
        const int y0 = 4 * (r / j->tw), x0 = 4 * (r % j->tw);
        float *base = j->dst + (size_t)s * j->h * j->w * j->c;
        for (int c0 = 0; c0 < j->c; c0 += WG_LANES) {
            const float *p = j->planes + t * j->c + c0;
            for (int k = 0; k < WG_POS; k++)
                memcpy(m[k / 6][k % 6], p + (size_t)k * j->plane, sizeof m[0][0]);
            for (int q = 0; q < 6; q++)
                at_lanes(m[0][q], 6 * WG_LANES, u[0][q], 6 * WG_LANES);
            for (int i = 0; i < 4; i++)
                at_lanes(u[i][0], WG_LANES, y[i][0], WG_LANES);
            for (int i = 0; i < 4 && y0 + i < j->h; i++)
                for (int k = 0; k < 4 && x0 + k < j->w; k++) {
                    float *o = base + ((size_t)(y0 + i) * j->w + x0 + k) * j->c + c0;
                    for (int l = 0; l < WG_LANES; l++) {
                        float v = y[i][k][l];
                        if (j->bias) v += j->bias[c0 + l];
                        o[l] = j->relu && !(v > 0.0f) ? 0.0f : v;
                    }
                }
        }
    }
}

/* ---- kernels and their gradients: rows o of (36, oc, in_c) planes ---- */

typedef struct kernel_job {
    const float *w; /* (oc, 3, 3, in_c) */
    float *planes;  /* (36, oc, in_c) */
    float *dw;      /* gradient_rows: (oc, 3, 3, in_c) */
    int oc, c, turned;
} kernel_job;

/* U = G g G^T of each (o, c) kernel, turned by 180 degrees when `turned` (the data gradient's) */
static SS_CPU_CLONES void kernel_rows(void *ctx, size_t o0, size_t o1) {
    const kernel_job *j = ctx;
    const size_t plane = (size_t)j->oc * j->c;
    float g[3][3][WG_LANES], u[6][3][WG_LANES], v[6][6][WG_LANES];
    for (size_t o = o0; o < o1; o++)
        for (int c0 = 0; c0 < j->c; c0 += WG_LANES) {
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++) {
                    const int ka = j->turned ? 2 - a : a, kb = j->turned ? 2 - b : b;
                    memcpy(g[a][b], j->w + ((o * 3 + ka) * 3 + kb) * j->c + c0, sizeof g[a][b]);
                }
            for (int b = 0; b < 3; b++)
                g_lanes(g[0][b], 3 * WG_LANES, u[0][b], 3 * WG_LANES);
            for (int k = 0; k < 6; k++)
                g_lanes(u[k][0], WG_LANES, v[k][0], WG_LANES);
            store_planes(v, j->planes + o * j->c + c0, plane);
        }
}

/* The forward pass's planes for the register tiles' products, (36, in_c, oc): U = G g G^T of each
 * kernel, 16 output channels at a time from wt, the weights transposed to (3, 3, in_c, oc).
 * Rows c of the planes. */
static SS_CPU_CLONES void kernel_cols(void *ctx, size_t c0, size_t c1) {
    const kernel_job *j = ctx;
    const size_t plane = (size_t)j->oc * j->c;
    float u[6][3][WG_LANES], v[6][6][WG_LANES];
    for (size_t c = c0; c < c1; c++)
        for (int o0 = 0; o0 < j->oc; o0 += WG_LANES) {
            const float *g = j->w + c * j->oc + o0;
            const size_t tap = (size_t)j->c * j->oc; /* from one kernel tap to the next */
            for (int b = 0; b < 3; b++)
                g_lanes(g + b * tap, 3 * tap, u[0][b], 3 * WG_LANES);
            for (int k = 0; k < 6; k++)
                g_lanes(u[k][0], WG_LANES, v[k][0], WG_LANES);
            store_planes(v, j->planes + c * j->oc + o0, plane);
        }
}

/* dw = G^T S G of each (o, c) */
static SS_CPU_CLONES void gradient_rows(void *ctx, size_t o0, size_t o1) {
    const kernel_job *j = ctx;
    const size_t plane = (size_t)j->oc * j->c;
    float s[6][6][WG_LANES], u[3][6][WG_LANES], g[3][3][WG_LANES];
    for (size_t o = o0; o < o1; o++)
        for (int c0 = 0; c0 < j->c; c0 += WG_LANES) {
            const float *p = j->planes + o * j->c + c0;
            for (int k = 0; k < WG_POS; k++)
                memcpy(s[k / 6][k % 6], p + (size_t)k * plane, sizeof s[0][0]);
            for (int b = 0; b < 6; b++)
                gt_lanes(s[0][b], 6 * WG_LANES, u[0][b], 6 * WG_LANES);
            for (int a = 0; a < 3; a++)
                gt_lanes(u[a][0], WG_LANES, g[a][0], WG_LANES);
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++)
                    memcpy(j->dw + ((o * 3 + a) * 3 + b) * j->c + c0, g[a][b], sizeof g[a][b]);
        }
}

/* ---- the products, one a position: by the direct convolution's register tiles where this CPU
 * runs them (conv_direct_tiles.h: each element one fused multiply-add chain in order, the same
 * bits in AVX-512 and AVX2; OpenBLAS's SGEMM on 16 to 64 channels ran far below its rate, and
 * resnet:20's layers lost to the direct passes), else one single-threaded BLAS call. The
 * positions are split over the threads (not each product over OpenBLAS's threads: products of 32
 * to 256 channels are too small for that, and ResNet-20's 32-channel layers ran 1.7 times slower
 * on two threads that way than on the direct passes); so each product's bits are one thread's on
 * any count ---- */

typedef struct products_job {
    const tile_set *ts; /* the register tiles, or NULL: the BLAS */
    int trans_a, trans_b, m, n, k, lda, ldb, ldc;
    float beta;
    const float *a, *b;
    float *c;
    size_t a_plane, b_plane, c_plane;
} products_job;

/* c (m, n) = a (m, k) b (k, n), row-major, n a multiple of the tiles' lanes */
static void tiles_nn(const tile_set *ts, int m, int n, int k, const float *a, int lda,
                     const float *b, int ldb, float *c, int ldc) {
    for (int n0 = 0; n0 < n;) {
        const int nv = tile_vectors(ts->slide_nv_max, (n - n0) / ts->lanes);
        const int rows = ts->slide_pixels(nv);
        for (int i0 = 0; i0 < m; i0 += rows) {
            const slide s = {.in = a + (size_t)i0 * lda,
                             .px = lda,
                             .run = k,
                             .w = b + n0,
                             .ldw = ldb,
                             .a1 = 1,
                             .t1 = k};
            ts->slide(&s, m - i0 < rows ? m - i0 : rows, nv, c + (size_t)i0 * ldc + n0, ldc, NULL,
                      0);
        }
        n0 += nv * ts->lanes;
    }
}

/* c (m, n) = a^T b (+ c unless first): a (k, m), b (k, n), c's rows as long as b's (ldb) */
static void tiles_tn(const tile_set *ts, int m, int n, int k, const float *a, int lda,
                     const float *b, int ldb, float *c, int first) {
    for (int n0 = 0; n0 < n;) {
        const int nv = tile_vectors(ts->filter_nv_max, (n - n0) / ts->lanes);
        const int rows = ts->filter_rows(nv);
        for (int i0 = 0; i0 < m; i0 += rows) {
            const filter_tile_args f = {.in = a + i0,
                                        .px = lda,
                                        .n_oh = 1,
                                        .n_ow = k,
                                        .dy = b + n0,
                                        .ldy = ldb,
                                        .dwt = c + (size_t)i0 * ldb + n0,
                                        .first = first,
                                        .samples = 1};
            ts->filter(&f, m - i0 < rows ? m - i0 : rows, nv);
        }
        n0 += nv * ts->lanes;
    }
}

static void products_part(void *ctx, size_t p0, size_t p1) {
    const products_job *j = ctx;
    for (size_t p = p0; p < p1; p++) {
        const float *a = j->a + p * j->a_plane, *b = j->b + p * j->b_plane;
        float *c = j->c + p * j->c_plane;
        if (!j->ts)
            cblas_sgemm(CblasRowMajor, j->trans_a ? CblasTrans : CblasNoTrans,
                        j->trans_b ? CblasTrans : CblasNoTrans, j->m, j->n, j->k, 1.0f, a, j->lda,
                        b, j->ldb, j->beta, c, j->ldc);
        else if (j->trans_a) {
            SS_ASSERT(!j->trans_b && j->ldc == j->ldb);
            tiles_tn(j->ts, j->m, j->n, j->k, a, j->lda, b, j->ldb, c, j->beta == 0.0f);
        } else {
            SS_ASSERT(!j->trans_b && j->beta == 0.0f);
            tiles_nn(j->ts, j->m, j->n, j->k, a, j->lda, b, j->ldb, c, j->ldc);
        }
    }
}

/* The 36 products c_p = op(a_p) op(b_p) (+ beta c_p) on `threads` threads. Through the BLAS,
 * OpenBLAS is held to one thread meanwhile where it had more (a command on one model: bench
 * kernels; every emulated run keeps it at one, emu/run.c), and set back after. */
static void products(const products_job *j, int threads) {
    const int blas = openblas_get_num_threads();
    if (threads <= 1 && blas <= 1) {
        products_part((void *)j, 0, WG_POS);
        return;
    }
    const int hold = !j->ts; /* the BLAS: the pool quiet (cpu_par_quiet), OpenBLAS on one thread */
    if (hold) cpu_par_quiet();
    if (hold && blas > 1) openblas_set_num_threads(1);
    cpu_par_for(threads > 1 ? threads : blas, WG_POS, 1, 1, products_part, (void *)j);
    if (hold && blas > 1) openblas_set_num_threads(blas);
}

/* ---- the passes ---- */

static void run_tiles(int threads, size_t tiles, int c, cpu_par_fn fn, tile_job *j) {
    cpu_par_for(threads, tiles, cpu_par_grain((size_t)WG_POS * c), 1, fn, j);
}

static tile_job tiles_job(const conv_geom *g, int c, size_t tiles) {
    tile_job j = {0};
    j.h = g->out_h;
    j.w = g->out_w;
    j.c = c;
    j.tw = tiles_of(g->out_w);
    j.per = tiles_of(g->out_h) * j.tw;
    j.plane = tiles * (size_t)c;
    return j;
}

/* ---- more than one thread: whole chunks a thread ----
 * A chunk's passes are small (resnet:20's 16-channel layer: 49 tiles, about 30 us on one thread),
 * and three passes split over the threads a chunk cost more in starts and joins than they gained:
 * that layer ran slower on two threads than on one. With the register tiles' products, whose
 * chains do not depend on how the tiles are cut into chunks, a pass on T > 1 threads therefore
 * gives each thread whole chunks of its own (the forward and data-gradient passes), or cuts the
 * batch into wider chunks (the filter gradient, whose sums over the tiles run in order; below).
 * Their planes are kept here between passes, grown as needed (one model computes on several threads
 * at a time: bench kernels, a train run of one worker); an emulated run, one thread a replica, uses
 * the workspace alone. */

/* The filter gradient on T threads: chunks of whole chunks, at least WG_WIDE_WORK x T
 * multiply-adds a product position (tiles x in_c x oc) where the batch has them: resnet:20's
 * 16-channel layer (12,544 a chunk) in chunks of 21 on two threads, vgg:11's (786,432 and more)
 * as they are. */
enum { WG_WIDE_WORK = 1 << 17 };

static pthread_mutex_t wg_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static float *wg_pool;
static size_t wg_pool_floats;

/* The pool of planes, at least `floats`; held (locked) until pool_release. */
static float *pool_take(size_t floats) {
    pthread_mutex_lock(&wg_pool_lock);
    if (floats > wg_pool_floats) {
        free(wg_pool);
        wg_pool = ss_malloc(floats * sizeof(float));
        wg_pool_floats = floats;
    }
    return wg_pool;
}

static void pool_release(void) {
    pthread_mutex_unlock(&wg_pool_lock);
}

/* out (samples, h, w, n) = the F(4, 3) convolution of in (samples, h, w, k) with the kernels'
 * planes u (36, n, k) when trans_u (the forward pass's (oc, in_c) rows), else (36, k, n) */
typedef struct fwd_job {
    const conv_geom *g;
    const float *in, *u, *bias;
    int k, n, trans_u, relu;
    float *out;
    float *v, *m;      /* a chunk's planes; on threads, part p's from v + p * set */
    size_t set;        /* floats of a set of planes (chunk_floats) */
    int chunks, parts; /* on threads: part p takes chunks [p chunks / parts, ...) */
} fwd_job;

/* samples s0 .. s0 + ns of the pass, on `threads` threads, in planes v and m */
static void forward_chunk(const fwd_job *j, int s0, int ns, float *v, float *m, int threads) {
    const conv_geom *g = j->g;
    const int k = j->k, n = j->n;
    const size_t in_size = (size_t)g->in_h * g->in_w * k, out_size = (size_t)g->in_h * g->in_w * n;
    const size_t tiles = (size_t)ns * tiles_of(g->out_h) * tiles_of(g->out_w);
    tile_job ij = tiles_job(g, k, tiles);
    ij.src = j->in + s0 * in_size;
    ij.out_planes = v;
    run_tiles(threads, tiles, k, input_tiles, &ij);
    const products_job pj = {.ts = conv_direct_tiles(),
                             .trans_b = j->trans_u,
                             .m = (int)tiles,
                             .n = n,
                             .k = k,
                             .lda = k,
                             .ldb = j->trans_u ? k : n,
                             .ldc = n,
                             .a = v,
                             .b = j->u,
                             .c = m,
                             .a_plane = tiles * k,
                             .b_plane = (size_t)n * k,
                             .c_plane = tiles * n};
    products(&pj, threads);
    tile_job oj = tiles_job(g, n, tiles);
    oj.planes = m;
    oj.dst = j->out + s0 * out_size;
    oj.bias = j->bias;
    oj.relu = j->relu;
    run_tiles(threads, tiles, n, output_tiles, &oj);
}

static void forward_parts(void *ctx, size_t p0, size_t p1) {
    const fwd_job *j = ctx;
    const int cs = chunk_samples(j->g);
    for (size_t p = p0; p < p1; p++) {
        const int c0 = (int)(p * j->chunks / j->parts), c1 = (int)((p + 1) * j->chunks / j->parts);
        for (int ch = c0; ch < c1; ch++) {
            const int s0 = ch * cs, ns = j->g->batch - s0 < cs ? j->g->batch - s0 : cs;
            forward_chunk(j, s0, ns, j->v + p * j->set, j->m + p * j->set, 1);
        }
    }
}

static void forward_chunks(const conv_geom *g, const float *in, int k, const float *u, int trans_u,
                           int n, const float *bias, int relu, const wg_space *sp, float *out,
                           int threads) {
    fwd_job j = {g, in, u, bias, k, n, trans_u, relu, out, sp->v, sp->m, 0, 0, 0};
    const int cs = chunk_samples(g);
    j.chunks = (g->batch + cs - 1) / cs;
    if (threads > 1 && j.chunks > 1 && conv_direct_tiles()) {
        j.parts = threads < j.chunks ? threads : j.chunks;
        j.set = chunk_floats(g, k > n ? k : n); /* max(in_c, oc) either way */
        float *pool = pool_take(2 * (size_t)j.parts * j.set);
        j.v = pool, j.m = pool + (size_t)j.parts * j.set;
        cpu_par_for(j.parts, (size_t)j.parts, 1, 1, forward_parts, &j);
        pool_release();
        return;
    }
    for (int s0 = 0; s0 < g->batch; s0 += cs)
        forward_chunk(&j, s0, g->batch - s0 < cs ? g->batch - s0 : cs, sp->v, sp->m, threads);
}

static void kernels_of(const float *w, int oc, int c, int turned, float *planes, int threads) {
    kernel_job kj = {w, planes, NULL, oc, c, turned};
    cpu_par_for(threads, (size_t)oc, cpu_par_grain((size_t)WG_POS * c), 1, kernel_rows, &kj);
}

void conv_winograd_forward(const conv_geom *g, int oc, const float *x, const float *w,
                           const float *bias, int relu, float *ws, float *y, int threads) {
    SS_ASSERT(conv_winograd_supports(g, oc));
    const wg_space sp = space_of(g, oc, ws);
    if (conv_direct_tiles()) {
        /* the register tiles take the planes as (in_c, oc): from the weights as (3, 3, in_c, oc),
         * in S (the filter gradient's, free in a forward pass) */
        conv_direct_transpose(w, (size_t)oc, (size_t)9 * g->in_c, sp.s);
        kernel_job kj = {sp.s, sp.u, NULL, oc, g->in_c, 0};
        cpu_par_for(threads, (size_t)g->in_c, cpu_par_grain((size_t)WG_POS * oc), 1, kernel_cols,
                    &kj);
        forward_chunks(g, x, g->in_c, sp.u, 0, oc, bias, relu, &sp, y, threads);
        return;
    }
    kernels_of(w, oc, g->in_c, 0, sp.u, threads);
    forward_chunks(g, x, g->in_c, sp.u, 1, oc, bias, relu, &sp, y, threads);
}

void conv_winograd_backward(const conv_geom *g, int oc, const float *x, const float *dy,
                            const float *w, float *ws, float *dw, float *dx, int threads) {
    SS_ASSERT(conv_winograd_supports(g, oc));
    const wg_space sp = space_of(g, oc, ws);
    const int c = g->in_c;
    const size_t in_size = (size_t)g->in_h * g->in_w * c, out_size = (size_t)g->in_h * g->in_w * oc;
    /* the filter gradient: S (36, oc, c) = sum over the chunks, in order, of dM^T V; on threads
     * with the register tiles, in wider chunks where they are small (WG_WIDE_WORK; the same
     * chains) */
    int cs = chunk_samples(g);
    float *v = sp.v, *m = sp.m;
    const int chunks = (g->batch + cs - 1) / cs;
    const double work = (double)cs * tiles_of(g->out_h) * tiles_of(g->out_w) * c * oc;
    const double want = ceil((double)WG_WIDE_WORK * threads / work);
    const int sets = want < chunks ? (int)want : chunks;
    const int wide = threads > 1 && conv_direct_tiles() && sets > 1;
    if (wide) {
        const size_t set = chunk_floats(g, oc);
        cs *= sets;
        float *pool = pool_take(2 * (size_t)sets * set);
        v = pool, m = pool + (size_t)sets * set;
    }
    for (int s0 = 0; s0 < g->batch; s0 += cs) {
        const int ns = g->batch - s0 < cs ? g->batch - s0 : cs;
        const size_t tiles = (size_t)ns * tiles_of(g->out_h) * tiles_of(g->out_w);
        tile_job ij = tiles_job(g, c, tiles);
        ij.src = x + s0 * in_size;
        ij.out_planes = v;
        run_tiles(threads, tiles, c, input_tiles, &ij);
        tile_job gj = tiles_job(g, oc, tiles);
        gj.src = dy + s0 * out_size;
        gj.out_planes = m;
        run_tiles(threads, tiles, oc, grad_tiles, &gj);
        const products_job pj = {.ts = conv_direct_tiles(),
                                 .trans_a = 1,
                                 .m = oc,
                                 .n = c,
                                 .k = (int)tiles,
                                 .lda = oc,
                                 .ldb = c,
                                 .ldc = c,
                                 .beta = s0 ? 1.0f : 0.0f,
                                 .a = m,
                                 .b = v,
                                 .c = sp.s,
                                 .a_plane = tiles * oc,
                                 .b_plane = tiles * c,
                                 .c_plane = (size_t)oc * c};
        products(&pj, threads);
    }
    if (wide) pool_release();
    kernel_job kj = {NULL, sp.s, dw, oc, c, 0};
    cpu_par_for(threads, (size_t)oc, cpu_par_grain((size_t)WG_POS * c), 1, gradient_rows, &kj);
    if (!dx) return;
    /* the data gradient: dy through the turned kernels, planes (36, oc, c): k = oc, n = c */
    kernels_of(w, oc, c, 1, sp.u, threads);
    forward_chunks(g, dy, oc, sp.u, 0, c, NULL, 0, &sp, dx, threads);
}
