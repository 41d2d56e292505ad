/* The register tiles of the direct convolution (conv_direct_tiles.h): AVX-512 and AVX2 with FMA,
 * compiled for their instruction set whatever the build flags; conv_direct.c calls them only on
 * a CPU that has it. Every output is one fused multiply-add chain in a fixed order, so both sets
 * give the same bits. */
#include "kernels/conv_direct_tiles.h"

#include "common/status.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define AVX512_FN   __attribute__((target("avx512f")))
#define AVX512_TILE static inline __attribute__((always_inline, target("avx512f")))
#define AVX2_FN     __attribute__((target("avx2,fma")))
#define AVX2_TILE   static inline __attribute__((always_inline, target("avx2,fma")))

/* ---- AVX-512: 32 registers of 16 floats ---- */

/* out[r * ldo + 16 v ...] = relu?(sum + bias) for r < R pixels and v < NV vectors of outputs:
 * R * NV accumulators, one fused multiply-add chain each, in (a, t) order. PX: the pixel stride
 * s->px as a constant, or 0 to read it (below). */
AVX512_TILE void slide_tile_512(const slide *s, const int R, const int NV, float *out, int ldo,
                                const float *bias, int relu, const int PX) {
    const int px = PX ? PX : s->px;
    __m512 acc[14][2];
#pragma GCC unroll 14
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++)
            acc[r][v] = _mm512_setzero_ps();
    for (int a = s->a0; a < s->a1; a++) {
        const float *in = s->in + a * s->row, *w = s->w + ((size_t)a * s->run + s->t0) * s->ldw;
        for (int t = s->t0; t < s->t1; t++, w += s->ldw) {
            __m512 wv[2];
#pragma GCC unroll 2
            for (int v = 0; v < NV; v++)
                wv[v] = _mm512_loadu_ps(w + 16 * v);
#pragma GCC unroll 14
            for (int r = 0; r < R; r++) {
                __m512 xb = _mm512_set1_ps(in[r * px + t]);
#pragma GCC unroll 2
                for (int v = 0; v < NV; v++)
                    acc[r][v] = _mm512_fmadd_ps(xb, wv[v], acc[r][v]);
            }
        }
    }
#pragma GCC unroll 14
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) {
            __m512 y = acc[r][v];
            if (bias) y = _mm512_add_ps(y, _mm512_loadu_ps(bias + 16 * v));
            if (relu) y = _mm512_max_ps(y, _mm512_setzero_ps()); /* y > 0 ? y : 0, as relu_fwd */
            _mm512_storeu_ps(out + (size_t)r * ldo + 16 * v, y);
        }
}

/* Tiles of up to 14 pixels x 32 channels (or 16): 28 accumulators, 2 weight vectors and the
 * broadcast. 7 x 64 needs a 33rd register and spills (11 % slower, measured on Zen 5). */
static int slide_pixels_512(int nv) {
    (void)nv;
    return 14;
}

#define SLIDE_CASE(NV, R)                                                                          \
    case (NV)*16 + (R):                                                                            \
        slide_tile_512(s, R, NV, out, ldo, bias, relu, 0);                                         \
        break;
#define SLIDE_CASES_7(NV)                                                                          \
    SLIDE_CASE(NV, 1)                                                                              \
    SLIDE_CASE(NV, 2)                                                                              \
    SLIDE_CASE(NV, 3)                                                                              \
    SLIDE_CASE(NV, 4) SLIDE_CASE(NV, 5) SLIDE_CASE(NV, 6) SLIDE_CASE(NV, 7)
#define SLIDE_CASES_14(NV)                                                                         \
    SLIDE_CASES_7(NV)                                                                              \
    SLIDE_CASE(NV, 8)                                                                              \
    SLIDE_CASE(NV, 9)                                                                              \
    SLIDE_CASE(NV, 10) SLIDE_CASE(NV, 11) SLIDE_CASE(NV, 12) SLIDE_CASE(NV, 13) SLIDE_CASE(NV, 14)

/* Full tiles at the pixel strides of the models' maps (resnet's 16, 32 and 64 channels, vgg's 64
 * and 128) take the stride as a constant. Read at run time, the 14 pixels' broadcasts need 14
 * index registers; GCC kept four of them in vector registers and moved them back at every offset
 * t (4 moves a 14 fused multiply-adds). A forward pass of 28 x 28 x 16 maps (batch 64, one
 * thread, Zen 4 EPYC) with the other core busy ran at 84 to 94 GFLOP/s, 106 to 108 with the
 * constant (alone on the machine, 109 to 111 either way; an 8-worker emulation of resnet:20 on
 * both cores gained 4 to 5 %). The chains are the same: the same bits. Returns 0 for the other
 * tiles. */
#define SLIDE_PX(PX)                                                                               \
    case PX:                                                                                       \
        if (nv == 1)                                                                               \
            slide_tile_512(s, 14, 1, out, ldo, bias, relu, PX);                                    \
        else                                                                                       \
            slide_tile_512(s, 14, 2, out, ldo, bias, relu, PX);                                    \
        return 1;

static AVX512_FN int slide_px_512(const slide *s, int r_n, int nv, float *out, int ldo,
                                  const float *bias, int relu) {
    if (r_n != 14) return 0;
    switch (s->px) {
        SLIDE_PX(16)
        SLIDE_PX(32)
        SLIDE_PX(64)
        SLIDE_PX(128)
    default:
        return 0;
    }
}

static AVX512_FN void slide_any_512(const slide *s, int r_n, int nv, float *out, int ldo,
                                    const float *bias, int relu) {
    if (slide_px_512(s, r_n, nv, out, ldo, bias, relu)) return;
    switch (nv * 16 + r_n) {
        SLIDE_CASES_14(2)
        SLIDE_CASES_14(1)
    default:
        SS_ASSERT(0 && "slide tile shape");
    }
}

AVX512_TILE void filter_tile_512(const filter_tile_args *f, const int R, const int NV) {
    __m512 acc[14][4];
#pragma GCC unroll 14
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            acc[r][v] = f->first ? _mm512_setzero_ps()
                                 : _mm512_loadu_ps(f->dwt + (size_t)r * f->ldy + 16 * v);
    for (int sm = 0; sm < f->samples; sm++)
        for (int oh = 0; oh < f->n_oh; oh++) {
            const float *in = f->in + sm * f->s_in + oh * f->row;
            const float *dy = f->dy + sm * f->s_dy + oh * f->dy_row;
            for (int ow = 0; ow < f->n_ow; ow++, in += f->px, dy += f->ldy) {
                __m512 dv[4];
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++)
                    dv[v] = _mm512_loadu_ps(dy + 16 * v);
#pragma GCC unroll 14
                for (int r = 0; r < R; r++) {
                    __m512 xb = _mm512_set1_ps(in[r]);
#pragma GCC unroll 4
                    for (int v = 0; v < NV; v++)
                        acc[r][v] = _mm512_fmadd_ps(xb, dv[v], acc[r][v]);
                }
            }
        }
#pragma GCC unroll 14
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            _mm512_storeu_ps(f->dwt + (size_t)r * f->ldy + 16 * v, acc[r][v]);
}

/* 6 rows x 64 channels, 12 x 32, 14 x 16 */
static int filter_rows_512(int nv) {
    return nv == 4 ? 6 : nv == 2 ? 12 : 14;
}

#define FILTER_CASE(NV, R)                                                                         \
    case (NV)*16 + (R):                                                                            \
        filter_tile_512(f, R, NV);                                                                 \
        break;
#define FILTER_CASES_6(NV)                                                                         \
    FILTER_CASE(NV, 1)                                                                             \
    FILTER_CASE(NV, 2) FILTER_CASE(NV, 3) FILTER_CASE(NV, 4) FILTER_CASE(NV, 5) FILTER_CASE(NV, 6)
#define FILTER_CASES_12(NV)                                                                        \
    FILTER_CASES_6(NV)                                                                             \
    FILTER_CASE(NV, 7)                                                                             \
    FILTER_CASE(NV, 8)                                                                             \
    FILTER_CASE(NV, 9) FILTER_CASE(NV, 10) FILTER_CASE(NV, 11) FILTER_CASE(NV, 12)

static AVX512_FN void filter_any_512(const filter_tile_args *f, int r_n, int nv) {
    switch (nv * 16 + r_n) {
        FILTER_CASES_6(4)
        FILTER_CASES_12(2)
        FILTER_CASES_12(1)
        FILTER_CASE(1, 13)
        FILTER_CASE(1, 14)
    default:
        SS_ASSERT(0 && "filter tile shape");
    }
}

/* ---- the strided convolution's data gradient (strided_dx_tile) ---- */

AVX512_TILE void strided_dx_tile_512(const strided_dx_tile *t, const int R, const int NV) {
    __m512 acc[14][2];
#pragma GCC unroll 14
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++)
            acc[r][v] = _mm512_setzero_ps();
    for (int a = 0; a < t->n_rows; a++)
        for (int b = 0; b < t->n_cols; b++) {
            const float *d = t->dy + ((size_t)t->oh[a] * t->out_w + t->ow[b]) * t->oc;
            const float *w = t->wt + (size_t)(t->ki[a] * t->kw + t->kj[b]) * t->oc * t->in_c;
            for (int o = 0; o < t->oc; o++, w += t->in_c) {
                __m512 wv[2];
#pragma GCC unroll 2
                for (int v = 0; v < NV; v++)
                    wv[v] = _mm512_loadu_ps(w + 16 * v);
#pragma GCC unroll 14
                for (int r = 0; r < R; r++) {
                    const __m512 db = _mm512_set1_ps(d[(size_t)r * t->oc + o]);
#pragma GCC unroll 2
                    for (int v = 0; v < NV; v++)
                        acc[r][v] = _mm512_fmadd_ps(db, wv[v], acc[r][v]);
                }
            }
        }
#pragma GCC unroll 14
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++)
            _mm512_storeu_ps(t->out + (size_t)r * t->ldo + 16 * v, acc[r][v]);
}

/* 14 pixels of 16 or 32 channels: up to 28 accumulators, 2 weight vectors and the broadcast */
static int dx_pixels_512(int nv) {
    (void)nv;
    return 14;
}

#define DX_CASE(NV, R)                                                                             \
    case (NV)*16 + (R):                                                                            \
        strided_dx_tile_512(t, R, NV);                                                             \
        break;
#define DX_CASES_7(NV)                                                                             \
    DX_CASE(NV, 1)                                                                                 \
    DX_CASE(NV, 2) DX_CASE(NV, 3) DX_CASE(NV, 4) DX_CASE(NV, 5) DX_CASE(NV, 6) DX_CASE(NV, 7)
#define DX_CASES(NV)                                                                               \
    DX_CASES_7(NV)                                                                                 \
    DX_CASE(NV, 8)                                                                                 \
    DX_CASE(NV, 9) DX_CASE(NV, 10) DX_CASE(NV, 11) DX_CASE(NV, 12) DX_CASE(NV, 13) DX_CASE(NV, 14)

static AVX512_FN void strided_dx_any_512(const strided_dx_tile *t, int r_n, int nv) {
    switch (nv * 16 + r_n) {
        DX_CASES(2)
        DX_CASES(1)
    default:
        SS_ASSERT(0 && "strided data-gradient tile shape");
    }
}

/* ---- the ranges' filter gradients summed and transposed (tile_set.sum_transpose) ---- */

static AVX512_FN void sum_transpose_512(const float *const *blocks, int n, size_t ldi, float *out,
                                        size_t ldo) {
    __m512 r[16], t[16], u[16], v[16];
    for (int i = 0; i < 16; i++) {
        r[i] = _mm512_loadu_ps(blocks[0] + i * ldi);
        for (int b = 1; b < n; b++)
            r[i] = _mm512_add_ps(r[i], _mm512_loadu_ps(blocks[b] + i * ldi));
    }
    /* pairs of rows interleaved by floats, then by pairs of floats, then by 128-bit lanes */
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
        const __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
        u[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        u[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        u[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        u[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    for (int i = 0; i < 16; i += 8)
        for (int k = 0; k < 4; k++) {
            v[i + k] = _mm512_shuffle_f32x4(u[i + k], u[i + 4 + k], 0x88);
            v[i + 4 + k] = _mm512_shuffle_f32x4(u[i + k], u[i + 4 + k], 0xdd);
        }
    for (int k = 0; k < 8; k++) {
        _mm512_storeu_ps(out + k * ldo, _mm512_shuffle_f32x4(v[k], v[8 + k], 0x88));
        _mm512_storeu_ps(out + (8 + k) * ldo, _mm512_shuffle_f32x4(v[k], v[8 + k], 0xdd));
    }
}

const tile_set conv_tiles_512 = {16,
                                 2,
                                 4,
                                 slide_pixels_512,
                                 filter_rows_512,
                                 slide_any_512,
                                 filter_any_512,
                                 dx_pixels_512,
                                 strided_dx_any_512,
                                 sum_transpose_512};

/* ---- AVX2 with FMA: 16 registers of 8 floats. Channels come in multiples of 16, so every
 * tile is 2 vectors wide: up to 6 pixels or filter rows, 12 accumulators, 2 weight (or dy)
 * vectors and a broadcast. The same chains as AVX-512 in the same order: the same bits. ---- */

AVX2_TILE void slide_tile_256(const slide *s, const int R, float *out, int ldo, const float *bias,
                              int relu) {
    __m256 acc[6][2];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
        acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int a = s->a0; a < s->a1; a++) {
        const float *in = s->in + a * s->row, *w = s->w + ((size_t)a * s->run + s->t0) * s->ldw;
        for (int t = s->t0; t < s->t1; t++, w += s->ldw) {
            __m256 w0 = _mm256_loadu_ps(w), w1 = _mm256_loadu_ps(w + 8);
#pragma GCC unroll 6
            for (int r = 0; r < R; r++) {
                __m256 xb = _mm256_broadcast_ss(in + r * s->px + t);
                acc[r][0] = _mm256_fmadd_ps(xb, w0, acc[r][0]);
                acc[r][1] = _mm256_fmadd_ps(xb, w1, acc[r][1]);
            }
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
        for (int v = 0; v < 2; v++) {
            __m256 y = acc[r][v];
            if (bias) y = _mm256_add_ps(y, _mm256_loadu_ps(bias + 8 * v));
            if (relu) y = _mm256_max_ps(y, _mm256_setzero_ps()); /* y > 0 ? y : 0 */
            _mm256_storeu_ps(out + (size_t)r * ldo + 8 * v, y);
        }
}

static int six_256(int nv) {
    (void)nv;
    return 6;
}

/* cases 1 to 6 of a switch on a tile's height, each calling TILE(R) with R a constant */
#define SIX_CASES(TILE)                                                                            \
    case 1:                                                                                        \
        TILE(1);                                                                                   \
        break;                                                                                     \
    case 2:                                                                                        \
        TILE(2);                                                                                   \
        break;                                                                                     \
    case 3:                                                                                        \
        TILE(3);                                                                                   \
        break;                                                                                     \
    case 4:                                                                                        \
        TILE(4);                                                                                   \
        break;                                                                                     \
    case 5:                                                                                        \
        TILE(5);                                                                                   \
        break;                                                                                     \
    case 6:                                                                                        \
        TILE(6);                                                                                   \
        break;

static AVX2_FN void slide_any_256(const slide *s, int r_n, int nv, float *out, int ldo,
                                  const float *bias, int relu) {
    SS_ASSERT(nv == 2);
#define SLIDE_256(R) slide_tile_256(s, R, out, ldo, bias, relu)
    switch (r_n) {
        SIX_CASES(SLIDE_256)
    default:
        SS_ASSERT(0 && "slide tile shape");
    }
#undef SLIDE_256
}

AVX2_TILE void filter_tile_256(const filter_tile_args *f, const int R) {
    __m256 acc[6][2];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
        for (int v = 0; v < 2; v++)
            acc[r][v] = f->first ? _mm256_setzero_ps()
                                 : _mm256_loadu_ps(f->dwt + (size_t)r * f->ldy + 8 * v);
    for (int sm = 0; sm < f->samples; sm++)
        for (int oh = 0; oh < f->n_oh; oh++) {
            const float *in = f->in + sm * f->s_in + oh * f->row;
            const float *dy = f->dy + sm * f->s_dy + oh * f->dy_row;
            for (int ow = 0; ow < f->n_ow; ow++, in += f->px, dy += f->ldy) {
                __m256 d0 = _mm256_loadu_ps(dy), d1 = _mm256_loadu_ps(dy + 8);
#pragma GCC unroll 6
                for (int r = 0; r < R; r++) {
                    __m256 xb = _mm256_broadcast_ss(in + r);
                    acc[r][0] = _mm256_fmadd_ps(xb, d0, acc[r][0]);
                    acc[r][1] = _mm256_fmadd_ps(xb, d1, acc[r][1]);
                }
            }
        }
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
        for (int v = 0; v < 2; v++)
            _mm256_storeu_ps(f->dwt + (size_t)r * f->ldy + 8 * v, acc[r][v]);
}

static AVX2_FN void filter_any_256(const filter_tile_args *f, int r_n, int nv) {
    SS_ASSERT(nv == 2);
#define FILTER_256(R) filter_tile_256(f, R)
    switch (r_n) {
        SIX_CASES(FILTER_256)
    default:
        SS_ASSERT(0 && "filter tile shape");
    }
#undef FILTER_256
}

/* the strided data gradient: up to 6 pixels of 16 channels (2 vectors) */
AVX2_TILE void strided_dx_tile_256(const strided_dx_tile *t, const int R) {
    __m256 acc[6][2];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
        acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int a = 0; a < t->n_rows; a++)
        for (int b = 0; b < t->n_cols; b++) {
            const float *d = t->dy + ((size_t)t->oh[a] * t->out_w + t->ow[b]) * t->oc;
            const float *w = t->wt + (size_t)(t->ki[a] * t->kw + t->kj[b]) * t->oc * t->in_c;
            for (int o = 0; o < t->oc; o++, w += t->in_c) {
                const __m256 w0 = _mm256_loadu_ps(w), w1 = _mm256_loadu_ps(w + 8);
#pragma GCC unroll 6
                for (int r = 0; r < R; r++) {
                    const __m256 db = _mm256_set1_ps(d[(size_t)r * t->oc + o]);
                    acc[r][0] = _mm256_fmadd_ps(db, w0, acc[r][0]);
                    acc[r][1] = _mm256_fmadd_ps(db, w1, acc[r][1]);
                }
            }
        }
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
        _mm256_storeu_ps(t->out + (size_t)r * t->ldo, acc[r][0]);
        _mm256_storeu_ps(t->out + (size_t)r * t->ldo + 8, acc[r][1]);
    }
}

static AVX2_FN void strided_dx_any_256(const strided_dx_tile *t, int r_n, int nv) {
    SS_ASSERT(nv == 2);
#define DX_256(R) strided_dx_tile_256(t, R)
    switch (r_n) {
        SIX_CASES(DX_256)
    default:
        SS_ASSERT(0 && "strided data-gradient tile shape");
    }
#undef DX_256
}

/* an 8 x 8 quarter of sum_transpose's tile */
static AVX2_FN void sum_transpose_8x8(const float *const *blocks, int n, size_t at, size_t ldi,
                                      float *out, size_t ldo) {
    __m256 r[8], t[8], u[8];
    for (int i = 0; i < 8; i++) {
        r[i] = _mm256_loadu_ps(blocks[0] + at + i * ldi);
        for (int b = 1; b < n; b++)
            r[i] = _mm256_add_ps(r[i], _mm256_loadu_ps(blocks[b] + at + i * ldi));
    }
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int k = 0; k < 4; k++) {
        _mm256_storeu_ps(out + k * ldo, _mm256_permute2f128_ps(u[k], u[4 + k], 0x20));
        _mm256_storeu_ps(out + (4 + k) * ldo, _mm256_permute2f128_ps(u[k], u[4 + k], 0x31));
    }
}

static AVX2_FN void sum_transpose_256(const float *const *blocks, int n, size_t ldi, float *out,
                                      size_t ldo) {
    for (int i = 0; i < 16; i += 8)
        for (int o = 0; o < 16; o += 8)
            sum_transpose_8x8(blocks, n, i * ldi + o, ldi, out + o * ldo + i, ldo);
}

const tile_set conv_tiles_256 = {8,
                                 2,
                                 2,
                                 six_256,
                                 six_256,
                                 slide_any_256,
                                 filter_any_256,
                                 six_256,
                                 strided_dx_any_256,
                                 sum_transpose_256};

#endif
