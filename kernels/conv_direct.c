/* Direct convolution with AVX-512 or AVX2 register tiles (see conv_direct.h). */
#include "kernels/conv_direct.h"
#include "kernels/conv_direct_tiles.h"
#include "kernels/cpu_par.h"

#include "common/status.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CONV_HAVE_X86 1
#else
#define CONV_HAVE_X86 0
#endif

static size_t round16(size_t n) {
    return (n + 15) / 16 * 16;
}

static size_t packed_weight_floats(const conv_geom *g, int oc) {
    return round16((size_t)g->kh * g->kw * g->in_c * (size_t)oc);
}

/* Samples the passes take at once (without hooks): 1 for maps of at least 8 x 8 outputs, else
 * enough for about 200 output pixels (at most 14, a forward tile's height). A group's padded
 * samples then feed each filter-gradient tile, which reads and writes its accumulators once a
 * group instead of once a sample (vgg:11's 3 x 3 maps: 9 pixels a sample against 24 loads and
 * stores of accumulators), and the forward and data tiles of maps narrower than 8 take the
 * group's samples at one pixel as their rows (a 1 x 1 map: 14 rows instead of 1). */
enum { GROUP_MAX = 14, GROUP_PIXELS = 200, GROUP_MAP = 64, SAMPLE_TILE_WIDTH = 8 };

static int group_samples(const conv_geom *g) {
    const int p = g->out_h * g->out_w;
    if (p >= GROUP_MAP) return 1;
    const int n = (GROUP_PIXELS + p - 1) / p;
    return n < GROUP_MAX ? n : GROUP_MAX;
}

int conv_direct_skips_frame(const conv_geom *g) {
    return conv_stride(g) == 1 && group_samples(g) > 1 && g->out_w < SAMPLE_TILE_WIDTH &&
           g->in_w < SAMPLE_TILE_WIDTH;
}

/* floats from one padded sample of x or of dy (with their frames) to the next in a group: a
 * multiple of 4 KiB plus a cache line, so that the samples a tile reads at once fall in distinct
 * L1 sets (vgg:11's 5 x 5 x 512 padded samples, 50 KiB apart, shared 2 sets of 64) */
static size_t padded_sample_floats(const conv_geom *g, int oc) {
    size_t x_pad = (size_t)(g->in_h + 2 * g->pad) * (g->in_w + 2 * g->pad) * g->in_c;
    size_t dy_pad = (size_t)(g->in_h + g->kh - 1) * (g->in_w + g->kw - 1) * oc;
    size_t n = x_pad > dy_pad ? x_pad : dy_pad;
    return group_samples(g) > 1 ? (n + 1023) / 1024 * 1024 + 16 : n;
}

/* floats of the padded buffer: a group's padded samples */
static size_t padded_floats(const conv_geom *g, int oc) {
    return round16(padded_sample_floats(g, oc) * (size_t)group_samples(g));
}

/* a thread's block: filter gradient (transposed), padded sample, one sample's y or dy, bias
 * gradient */
static size_t block_floats(const conv_geom *g, int oc) {
    return packed_weight_floats(g, oc) + padded_floats(g, oc) +
           round16((size_t)g->out_h * g->out_w * oc) + round16((size_t)oc);
}

/* workspace: packed weights, then the first thread's block (below) */
size_t conv_direct_workspace_floats(const conv_geom *g, int oc) {
    return packed_weight_floats(g, oc) + block_floats(g, oc);
}

conv_direct_isa conv_direct_best_isa(void) {
#if CONV_HAVE_X86
    if (__builtin_cpu_supports("avx512f")) return CONV_DIRECT_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CONV_DIRECT_AVX2;
#endif
    return CONV_DIRECT_NONE;
}

/* what the passes use: the best instruction set, at most the cap (tests lower it) */
static conv_direct_isa isa_cap = CONV_DIRECT_AVX512;

void conv_direct_cap_isa(conv_direct_isa cap) {
    isa_cap = cap;
}

static conv_direct_isa isa_in_use(void) {
    conv_direct_isa best = conv_direct_best_isa();
    return best < isa_cap ? best : isa_cap;
}

int conv_direct_available(void) {
    return isa_in_use() != CONV_DIRECT_NONE;
}

int conv_direct_supports(const conv_geom *g, int oc, int need_dx) {
    return conv_direct_available() && conv_stride(g) == 1 && oc > 0 && oc % 16 == 0 &&
           (!need_dx || g->in_c % 16 == 0);
}

int conv_direct_supports_strided(const conv_geom *g, int oc) {
    return conv_direct_available() && conv_stride(g) >= 1 && oc > 0 && oc % 16 == 0;
}

int conv_direct_supports_strided_dx(const conv_geom *g, int oc) {
    return conv_direct_available() && conv_stride(g) > 1 && oc > 0 && g->in_c % 16 == 0 &&
           g->kh <= 16 && g->kw <= 16;
}

#if CONV_HAVE_X86

/* dst ((h + 2 ph) x (w + 2 pw) x c) = src (h x w x c) inside a frame of zeros */
static void pad_sample(const float *src, int h, int w, int c, int ph, int pw, float *dst) {
    const size_t row = (size_t)(w + 2 * pw) * c, run = (size_t)w * c;
    memset(dst, 0, (size_t)ph * row * sizeof(float));
    for (int i = 0; i < h; i++) {
        float *d = dst + (size_t)(i + ph) * row;
        memset(d, 0, (size_t)pw * c * sizeof(float));
        memcpy(d + (size_t)pw * c, src + (size_t)i * run, run * sizeof(float));
        memset(d + (size_t)pw * c + run, 0, (size_t)pw * c * sizeof(float));
    }
    memset(dst + (size_t)(h + ph) * row, 0, (size_t)ph * row * sizeof(float));
}

/* ---- drivers: the same for every instruction set ---- */

/* One padded image (rows of width_pad pixels of `px` floats) slid over by a kernel of kh rows
 * and run = kw * px floats, into out (out_h, out_w, n_out) with weights (kh * run, n_out) packed
 * by pack_blocks. */
typedef struct slide_pass {
    const float *in;
    int width_pad, px, kh, run;
    const float *w;
    int n_out, out_h, out_w;
    const float *bias;
    int relu;
    int samples;        /* consecutive padded images and outputs: */
    size_t s_in, s_out; /* floats from one to the next in `in` and in out */
    /* skip_frame: tiles of samples (slide_samples), each output's chain over the taps inside the
     * image (img_h x img_w inside a frame of frame_h rows and frame_w columns on top and left) */
    int skip, img_h, img_w, frame_h, frame_w;
    int stride; /* input pixels from one output pixel to the next, along a row and a column (0:
                   1); above 1 only without skip */
} slide_pass;

static const tile_set *tiles_in_use(void) {
    conv_direct_isa isa = isa_in_use();
    SS_ASSERT(isa != CONV_DIRECT_NONE);
    return isa == CONV_DIRECT_AVX512 ? &conv_tiles_512 : &conv_tiles_256;
}

const tile_set *conv_direct_tiles(void) {
    return conv_direct_available() ? tiles_in_use() : NULL;
}

/* dst (cols, rows) = src (rows, cols) transposed, in tiles of 16 x 16 that stay in L1 (vgg:11's
 * (4608, 512) weights: writing a column at a time touched a page a float) */
void conv_direct_transpose(const float *src, size_t rows, size_t cols, float *dst) {
    for (size_t i0 = 0; i0 < rows; i0 += 16)
        for (size_t j0 = 0; j0 < cols; j0 += 16) {
            const size_t i1 = i0 + 16 < rows ? i0 + 16 : rows, j1 = j0 + 16 < cols ? j0 + 16 : cols;
            for (size_t i = i0; i < i1; i++)
                for (size_t j = j0; j < j1; j++)
                    dst[j * rows + i] = src[i * cols + j];
        }
}

/* Output channels in blocks of lanes * tile_vectors(slide_nv_max, ...), as the slide tiles take
 * them: the block from o0 has width bw = block_width(ts, n, o0). */
static int block_width(const tile_set *ts, int n, int o0) {
    return ts->lanes * tile_vectors(ts->slide_nv_max, (n - o0) / ts->lanes);
}

/* The starts of the blocks of n channels (block_width), in starts[0 .. count), starts[count] = n;
 * starts has room for n + 1 entries. */
static int block_starts(const tile_set *ts, int n, int *starts) {
    int count = 0;
    for (int o0 = 0; o0 < n; o0 += block_width(ts, n, o0))
        starts[count++] = o0;
    starts[count] = n;
    return count;
}

typedef struct pack_job {
    const int *starts;
    const float *src;
    size_t k;
    float *dst;
} pack_job;

static void pack_part(void *ctx, size_t b0, size_t b1) {
    const pack_job *j = ctx;
    for (size_t b = b0; b < b1; b++) {
        const int o0 = j->starts[b], bw = j->starts[b + 1] - o0;
        conv_direct_transpose(j->src + (size_t)o0 * j->k, (size_t)bw, j->k,
                              j->dst + (size_t)o0 * j->k);
    }
}

/* dst = the weights (k, n) with row t and column o at src[o * k + t], in blocks of
 * columns, each (k, bw) contiguous from dst + o0 * k: a tile's weight vectors one after the
 * other, instead of n floats apart (vgg:11's (4608, 512): a 4 KiB page every 2 vectors). The
 * blocks on `threads` threads (a copy: the same floats on any number). */
static void pack_blocks(const tile_set *ts, const float *src, size_t k, int n, float *dst,
                        int threads) {
    int *starts = malloc(((size_t)n + 1) * sizeof(int));
    SS_ASSERT(starts != NULL);
    pack_job job = {starts, src, k, dst};
    const int blocks = block_starts(ts, n, starts);
    cpu_par_for(threads, (size_t)blocks, cpu_par_grain(k * (size_t)(n / blocks)), 1, pack_part,
                &job);
    free(starts);
}

/* The kernel rows a0 <= a < a1 (of kh) that output row oh reads inside an image of img rows
 * behind a frame of `frame` rows, its input rows st apart: 0 <= oh st + a - frame < img */
static void rows_inside(int oh, int st, int frame, int img, int kh, int *a0, int *a1) {
    const int lo = frame - oh * st, hi = img + frame - oh * st;
    *a0 = lo > 0 ? lo : 0;
    *a1 = hi < kh ? hi : kh;
    if (*a1 < *a0) *a1 = *a0;
}

/* The samples' images one by one, each in tiles of pixels along an output row; a tile's chains
 * leave out the kernel rows that fall in the frame above or below the image (the same for every
 * pixel of the row: 2 of 3 rows are left on a 3 x 3 kernel's first and last output rows). */
static void slide_rows(const tile_set *ts, const slide_pass *p, float *out) {
    const int st = p->stride > 1 ? p->stride : 1;
    for (int sm = 0; sm < p->samples; sm++, out += p->s_out)
        for (int oh = 0; oh < p->out_h; oh++) {
            int a0, a1;
            rows_inside(oh, st, p->frame_h, p->img_h, p->kh, &a0, &a1);
            for (int o0 = 0; o0 < p->n_out;) {
                int nv = tile_vectors(ts->slide_nv_max, (p->n_out - o0) / ts->lanes);
                int r_max = ts->slide_pixels(nv);
                for (int ow0 = 0; ow0 < p->out_w; ow0 += r_max) {
                    int r_n = p->out_w - ow0 < r_max ? p->out_w - ow0 : r_max;
                    slide s = {p->in + sm * p->s_in +
                                   ((size_t)oh * st * p->width_pad + (size_t)ow0 * st) * p->px,
                               (size_t)p->width_pad * p->px,
                               p->px * st,
                               p->run,
                               p->w + (size_t)o0 * p->kh * p->run,
                               ts->lanes * nv,
                               a0,
                               a1,
                               0,
                               p->run};
                    ts->slide(&s, r_n, nv, out + ((size_t)oh * p->out_w + ow0) * p->n_out + o0,
                              p->n_out, p->bias ? p->bias + o0 : NULL, p->relu);
                }
                o0 += ts->lanes * nv;
            }
        }
}

/* The kernel taps k0 <= k < k1 (of n) that output position o reads inside an image of img
 * positions behind a frame of `frame`: 0 <= o + k - frame < img */
static void taps_inside(int o, int frame, int img, int n, int *k0, int *k1) {
    int lo = frame - o, hi = img + frame - o;
    *k0 = lo > 0 ? lo : 0;
    *k1 = hi < n ? hi : n;
    if (*k1 < *k0) *k1 = *k0;
}

/* Every output pixel of the samples at once: tiles of one pixel in up to slide_pixels(nv)
 * samples, the samples' images s_in floats apart acting as the pixel stride; the tile's chains
 * leave out the kernel rows and columns that fall in the frame (the same for all its samples). */
static void slide_samples(const tile_set *ts, const slide_pass *p, float *out) {
    SS_ASSERT(p->s_in <= INT_MAX / GROUP_MAX && p->s_out <= INT_MAX / GROUP_MAX);
    /* channel blocks outermost: a block's weights (kh * run x 32 floats, 590 KB for 512 input
     * channels) stay in L2 across the map's pixels */
    for (int o0 = 0; o0 < p->n_out;) {
        int nv = tile_vectors(ts->slide_nv_max, (p->n_out - o0) / ts->lanes);
        int r_max = ts->slide_pixels(nv);
        for (int oh = 0; oh < p->out_h; oh++)
            for (int ow = 0; ow < p->out_w; ow++) {
                int a0, a1, b0, b1;
                taps_inside(oh, p->frame_h, p->img_h, p->kh, &a0, &a1);
                taps_inside(ow, p->frame_w, p->img_w, p->run / p->px, &b0, &b1);
                const float *in = p->in + ((size_t)oh * p->width_pad + ow) * p->px;
                float *o_px = out + ((size_t)oh * p->out_w + ow) * p->n_out + o0;
                for (int s0 = 0; s0 < p->samples; s0 += r_max) {
                    int r_n = p->samples - s0 < r_max ? p->samples - s0 : r_max;
                    slide s = {in + s0 * p->s_in,
                               (size_t)p->width_pad * p->px,
                               (int)p->s_in,
                               p->run,
                               p->w + (size_t)o0 * p->kh * p->run,
                               ts->lanes * nv,
                               a0,
                               a1,
                               b0 * p->px,
                               b1 * p->px};
                    ts->slide(&s, r_n, nv, o_px + s0 * p->s_out, (int)p->s_out,
                              p->bias ? p->bias + o0 : NULL, p->relu);
                }
            }
        o0 += ts->lanes * nv;
    }
}

static void slide_image(const tile_set *ts, const slide_pass *p, float *out) {
    SS_ASSERT(p->stride <= 1 || !p->skip);
    if (p->skip)
        slide_samples(ts, p, out);
    else
        slide_rows(ts, p, out);
}

/* Adds the terms of n samples to rows [r0, r1) of dwt (kh * run, oc): without skip, from padded
 * samples (s_in floats apart); with skip, from the samples of x themselves (in_size apart), of
 * the output pixels whose tap is inside the image, a tile within one kernel column. A row's
 * sums are the same bits whichever rows go with it. */
static void filter_sample(const tile_set *ts, const conv_geom *g, int oc, const float *x,
                          const float *dy, int n, size_t s_in, int skip, int first, float *dwt,
                          int r0, int r1) {
    const int run = g->kw * g->in_c, st = conv_stride(g);
    const size_t row = (size_t)(skip ? g->in_w : g->in_w + 2 * g->pad) * g->in_c;
    SS_ASSERT(st == 1 || !skip);
    const int cols = skip ? g->kw : 1, col_run = skip ? g->in_c : run;
    for (int a = 0; a < g->kh; a++) {
        /* output rows whose input row oh st + a - pad is inside (the frame's rows left out) */
        int oh0 = 0, oh1 = g->out_h;
        while (oh0 < oh1 && oh0 * st + a < g->pad)
            oh0++;
        while (oh1 > oh0 && (oh1 - 1) * st + a - g->pad >= g->in_h)
            oh1--;
        for (int b = 0; b < cols; b++) {
            /* this column's rows (a run + t for t in [t_lo, t_hi)) within [r0, r1) */
            const int t_lo = b * col_run > r0 - a * run ? b * col_run : r0 - a * run;
            const int t_hi = (b + 1) * col_run < r1 - a * run ? (b + 1) * col_run : r1 - a * run;
            if (t_lo >= t_hi) continue;
            int ow0 = 0, ow1 = g->out_w;
            if (skip) taps_inside(b, g->pad, g->in_w, g->out_w, &ow0, &ow1);
            if (oh0 == oh1 || ow0 == ow1) { /* no terms: zeros, or nothing to add */
                for (int t = t_lo; first && t < t_hi; t++)
                    memset(dwt + ((size_t)a * run + t) * oc, 0, (size_t)oc * sizeof(float));
                continue;
            }
            /* pixel (oh0, ow0)'s input at kernel row a, column b */
            const float *in_ab =
                skip ? x + ((size_t)(oh0 + a - g->pad) * g->in_w + (size_t)(ow0 + b - g->pad)) *
                               g->in_c
                     : x + ((size_t)oh0 * st + a) * row;
            const float *dy0 = dy + ((size_t)oh0 * g->out_w + ow0) * oc;
            for (int o0 = 0; o0 < oc;) {
                int nv = tile_vectors(ts->filter_nv_max, (oc - o0) / ts->lanes);
                int r_max = ts->filter_rows(nv);
                for (int t0 = t_lo; t0 < t_hi; t0 += r_max) {
                    int r_n = t_hi - t0 < r_max ? t_hi - t0 : r_max;
                    filter_tile_args f = {in_ab + (t0 - b * col_run),
                                          row * st,
                                          g->in_c * st,
                                          oh1 - oh0,
                                          ow1 - ow0,
                                          dy0 + o0,
                                          (size_t)g->out_w * oc,
                                          oc,
                                          dwt + ((size_t)a * run + t0) * oc + o0,
                                          first,
                                          n,
                                          s_in,
                                          (size_t)g->out_h * g->out_w * oc};
                    ts->filter(&f, r_n, nv);
                }
                o0 += ts->lanes * nv;
            }
        }
    }
}

/* ---- samples in parallel: contiguous ranges, one per thread, each with its block of scratch
 * (the first in the workspace, the others allocated per call). A range's samples go in order, so
 * the forward and data passes give the same bits for any thread count; the filter and bias
 * gradients are each range's sums, added in range order (one range: no addition). ---- */

enum { CONV_MAX_THREADS = 64 };

static float *block_pad(const conv_geom *g, int oc, float *block) {
    return block + packed_weight_floats(g, oc);
}

static float *block_sample(const conv_geom *g, int oc, float *block) {
    return block_pad(g, oc, block) + padded_floats(g, oc);
}

static float *block_db(const conv_geom *g, int oc, float *block) {
    return block_sample(g, oc, block) + round16((size_t)g->out_h * g->out_w * oc);
}

typedef void (*range_fn)(const void *job, int b0, int b1, float *block);

typedef struct ranges {
    int n;
    float *block[CONV_MAX_THREADS];
} ranges;

static void ranges_open(ranges *r, int threads, const conv_geom *g, int oc, float *ws) {
    int n = threads < g->batch ? threads : g->batch;
    r->n = n < 1 ? 1 : n > CONV_MAX_THREADS ? CONV_MAX_THREADS : n;
    r->block[0] = ws + packed_weight_floats(g, oc);
    const size_t bytes = block_floats(g, oc) * sizeof(float);
    for (int t = 1; t < r->n; t++) {
        r->block[t] = aligned_alloc(64, (bytes + 63) / 64 * 64);
        SS_ASSERT(r->block[t] != NULL);
    }
}

static void ranges_close(ranges *r) {
    for (int t = 1; t < r->n; t++)
        free(r->block[t]);
}

typedef struct range_call {
    const ranges *r;
    int batch;
    range_fn fn;
    const void *job;
} range_call;

/* samples [b0, b1): range t of the split below, with block t */
static void range_part(void *ctx, size_t b0, size_t b1) {
    const range_call *c = ctx;
    int t = 0;
    while (t + 1 < c->r->n && (size_t)c->batch * (t + 1) / c->r->n <= b0)
        t++;
    c->fn(c->job, (int)b0, (int)b1, c->r->block[t]);
}

/* Range t = [batch t / n, batch (t+1) / n) with block t, on the CPU backend's threads
 * (cpu_par.h). */
static void ranges_run(const ranges *r, int batch, range_fn fn, const void *job) {
    range_call c = {r, batch, fn, job};
    cpu_par_for(r->n, (size_t)batch, 1, 1, range_part, &c);
}

typedef struct fwd_job {
    const tile_set *ts;
    const conv_geom *g;
    int oc;
    const float *x, *wt, *bias;
    int relu;
    float *y;
    const conv_direct_hooks *hooks;
} fwd_job;

static void forward_range(const void *arg, int b0, int b1, float *block) {
    const fwd_job *j = arg;
    const conv_geom *g = j->g;
    const size_t in_size = (size_t)g->in_h * g->in_w * g->in_c;
    const size_t out_size = (size_t)g->out_h * g->out_w * j->oc;
    const size_t s_pad = padded_sample_floats(g, j->oc);
    float *x_pad = block_pad(g, j->oc, block), *y_sample = block_sample(g, j->oc, block);
    slide_pass p = {x_pad,
                    g->in_w + 2 * g->pad,
                    g->in_c,
                    g->kh,
                    g->kw * g->in_c,
                    j->wt,
                    j->oc,
                    g->out_h,
                    g->out_w,
                    j->bias,
                    j->relu,
                    1,
                    s_pad,
                    out_size,
                    conv_direct_skips_frame(g),
                    g->in_h,
                    g->in_w,
                    g->pad,
                    g->pad,
                    conv_stride(g)};
    if (!j->hooks) { /* groups of samples */
        const int group = group_samples(g);
        for (int b = b0; b < b1; b += group) {
            p.samples = b1 - b < group ? b1 - b : group;
            for (int sm = 0; sm < p.samples; sm++)
                pad_sample(j->x + (b + sm) * in_size, g->in_h, g->in_w, g->in_c, g->pad, g->pad,
                           x_pad + sm * s_pad);
            slide_image(j->ts, &p, j->y + b * out_size);
        }
        return;
    }
    for (int b = b0; b < b1; b++) {
        pad_sample(j->x + b * in_size, g->in_h, g->in_w, g->in_c, g->pad, g->pad, x_pad);
        float *y_b = j->hooks->output_in_workspace ? y_sample : j->y + b * out_size;
        slide_image(j->ts, &p, y_b);
        if (j->hooks->output_done) j->hooks->output_done(j->hooks->ctx, b, y_b);
    }
}

/* 1 x 1 maps whose padding centres the kernel (vgg's last stage on 28 x 28 images): every output
 * reads the input through the kernel's centre only, the other taps lying in the zero frame. The
 * chains that skip the frame (conv_direct_skips_frame) are then those of a 1 x 1 kernel holding
 * the centre's weights, and the passes run as that instead of packing, reducing and transposing
 * the whole kernel on one thread (at 3 x 3 x 512 x 512: 9.4 MB of weights a pass for 34 MFLOP of
 * products, 3 ms of a 3 ms forward pass on one thread or two). */
static int centre_only(const conv_geom *g) {
    return g->in_h == 1 && g->in_w == 1 && g->kh == g->kw && g->kh == 2 * g->pad + 1 && g->kh > 1 &&
           conv_direct_skips_frame(g);
}

static conv_geom centre_geom(const conv_geom *g) {
    conv_geom c = *g;
    c.kh = c.kw = 1;
    c.pad = 0;
    return c;
}

/* wc (oc, c) = w (oc, kh, kw, c) at the kernel's centre */
static void centre_weights(const conv_geom *g, int oc, const float *w, float *wc) {
    const size_t c = (size_t)g->in_c, at = ((size_t)g->pad * g->kw + g->pad) * c;
    for (int o = 0; o < oc; o++)
        memcpy(wc + o * c, w + (size_t)o * g->kh * g->kw * c + at, c * sizeof(float));
}

/* The centre's workspace: the 1 x 1 passes', then wc and its gradient (within the kernel's) */
static float *centre_ws(const conv_geom *g, const conv_geom *c1, int oc, float *ws) {
    const size_t need = conv_direct_workspace_floats(c1, oc) + 2 * (size_t)oc * g->in_c;
    SS_ASSERT(need <= conv_direct_workspace_floats(g, oc));
    return ws + conv_direct_workspace_floats(c1, oc);
}

void conv_direct_forward(const conv_geom *g, int oc, const float *x, const float *w,
                         const float *bias, int relu, float *ws, float *y,
                         const conv_direct_hooks *hooks, int threads) {
    if (centre_only(g)) {
        const conv_geom c1 = centre_geom(g);
        float *wc = centre_ws(g, &c1, oc, ws);
        centre_weights(g, oc, w, wc);
        conv_direct_forward(&c1, oc, x, wc, bias, relu, ws, y, hooks, threads);
        return;
    }
    const tile_set *ts = tiles_in_use();
    const size_t kkc = (size_t)g->kh * g->kw * g->in_c;
    float *wt = ws; /* (kkc, oc) in blocks of channels: a weight vector per kernel offset */
    pack_blocks(ts, w, kkc, oc, wt, threads);
    fwd_job job = {ts, g, oc, x, wt, bias, relu, y, hooks};
    ranges r;
    ranges_open(&r, threads, g, oc, ws);
    ranges_run(&r, g->batch, forward_range, &job);
    ranges_close(&r);
}

typedef struct rot_job {
    const int *starts;
    const conv_geom *g;
    int oc;
    const float *w;
    float *w2;
} rot_job;

static void rotated_part(void *ctx, size_t b0, size_t b1) {
    const rot_job *j = ctx;
    const conv_geom *g = j->g;
    const int c = g->in_c, oc = j->oc;
    const size_t k = (size_t)g->kh * g->kw * oc;
    for (size_t blk = b0; blk < b1; blk++) {
        const int c0 = j->starts[blk], bw = j->starts[blk + 1] - c0;
        for (int a = 0; a < g->kh; a++)
            for (int b = 0; b < g->kw; b++)
                for (int o = 0; o < oc; o++)
                    memcpy(j->w2 + (size_t)c0 * k + (((size_t)a * g->kw + b) * oc + o) * bw,
                           j->w +
                               (((size_t)o * g->kh + (g->kh - 1 - a)) * g->kw + (g->kw - 1 - b)) *
                                   c +
                               c0,
                           (size_t)bw * sizeof(float));
    }
}

/* w2 (kh, kw, oc, c) = w (oc, kh, kw, c) with the kernel rotated by 180 degrees, in blocks of
 * input channels (pack_blocks), the blocks on `threads` threads */
static void pack_rotated(const tile_set *ts, const conv_geom *g, int oc, const float *w, float *w2,
                         int threads) {
    const int c = g->in_c;
    int *starts = malloc(((size_t)c + 1) * sizeof(int));
    SS_ASSERT(starts != NULL);
    rot_job job = {starts, g, oc, w, w2};
    const int blocks = block_starts(ts, c, starts);
    const size_t per_block = (size_t)g->kh * g->kw * oc * (size_t)(c / blocks);
    cpu_par_for(threads, (size_t)blocks, cpu_par_grain(per_block), 1, rotated_part, &job);
    free(starts);
}

/* dw (oc, kkc) = the transpose of the sum of the ranges' filter gradients (kkc, oc), each
 * element summed in range order (block 0 + block 1 + ...) as one loop over the ranges would:
 * rows of kkc in parts of 16 rows on the threads, so that two parts' stores into a row of dw
 * stay on different cache lines; whole 16 x 16 tiles summed and transposed in registers
 * (ts->sum_transpose), the others element by element. The element loop took about 10 ms of
 * vgg:11's 290 ms step on one thread (perf), twice the time of its memory traffic. */
typedef struct sum_job {
    const tile_set *ts;
    const ranges *r;
    size_t kkc;
    int oc;
    float *dw;
} sum_job;

static void sum_part(void *ctx, size_t i0, size_t i1) {
    const sum_job *j = ctx;
    const size_t oc = (size_t)j->oc;
    const float *blocks[CONV_MAX_THREADS];
    for (size_t t0 = i0; t0 < i1; t0 += 16)
        for (size_t o0 = 0; o0 < oc; o0 += 16) {
            const size_t t1 = t0 + 16 < i1 ? t0 + 16 : i1, o1 = o0 + 16 < oc ? o0 + 16 : oc;
            if (t1 - t0 == 16 && o1 - o0 == 16) {
                for (int t = 0; t < j->r->n; t++)
                    blocks[t] = j->r->block[t] + t0 * oc + o0;
                j->ts->sum_transpose(blocks, j->r->n, oc, j->dw + o0 * j->kkc + t0, j->kkc);
                continue;
            }
            for (size_t i = t0; i < t1; i++)
                for (size_t o = o0; o < o1; o++) {
                    float s = j->r->block[0][i * oc + o];
                    for (int t = 1; t < j->r->n; t++)
                        s += j->r->block[t][i * oc + o];
                    j->dw[o * j->kkc + i] = s;
                }
        }
}

/* db (oc) += the rows of one sample's dy (rows, oc), in order: bias_grad's sums */
static void bias_rows(const float *dy, size_t rows, int oc, int first, float *db) {
    if (first) memset(db, 0, (size_t)oc * sizeof(float));
    for (size_t r = 0; r < rows; r++)
        for (int o = 0; o < oc; o++)
            db[o] += dy[r * oc + o];
}

typedef struct bwd_job {
    const tile_set *ts;
    const conv_geom *g;
    int oc;
    const float *x, *dy, *w2;
    float *db, *dx; /* db: the first range's (the others use their blocks') */
    const conv_direct_hooks *hooks;
    int filter_done; /* the filter gradient is computed by rows (filter_rows_part) */
} bwd_job;

/* Sample by sample (or by groups of samples, group_samples), so that its dy is read from memory
 * once and then from the cache by the three passes; the padded buffer serves x, then dy. */
/* Samples whose x and dy fill about 1 MiB (a core's L2 on the EPYC of docs/PERFORMANCE.md): a
 * filter tile reads and writes its part of dwt once a chunk, and the chunk's x and dy stay in L2
 * across the tiles. vgg:11's 3 x 3 x 512 maps: 28 samples (9.4 MB of dwt loaded and stored 3 times
 * a batch of 64 instead of 5 in groups of 14); its 7 x 7 x 256 maps: 10 (a whole batch a tile: 36
 * ms a pass instead of 28, the dy of 64 samples read from L3 by every tile). */
enum { FILTER_CHUNK_BYTES = 1 << 20 };

static int filter_chunk(const conv_geom *g, int oc) {
    const size_t per =
        ((size_t)g->in_h * g->in_w * g->in_c + (size_t)g->out_h * g->out_w * oc) * sizeof(float);
    const size_t n = FILTER_CHUNK_BYTES / per;
    return n < 1 ? 1 : n > INT_MAX ? INT_MAX : (int)n;
}

static void backward_range(const void *arg, int b0, int b1, float *block) {
    const bwd_job *j = arg;
    const conv_geom *g = j->g;
    const int oc = j->oc, qh = g->kh - 1 - g->pad, qw = g->kw - 1 - g->pad;
    const size_t rows = (size_t)g->out_h * g->out_w, out_size = rows * oc;
    const size_t in_size = (size_t)g->in_h * g->in_w * g->in_c;
    const size_t s_pad = padded_sample_floats(g, oc);
    const int kkc = g->kh * g->kw * g->in_c;
    float *pad = block_pad(g, oc, block), *dy_sample = block_sample(g, oc, block);
    float *db = b0 == 0 ? j->db : block_db(g, oc, block);
    const int skip = conv_direct_skips_frame(g);
    slide_pass p = {pad,     g->out_w + 2 * qw, oc,       g->kh, g->kw * oc, j->w2, g->in_c,
                    g->in_h, g->in_w,           NULL,     0,     1,          s_pad, in_size,
                    skip,    g->out_h,          g->out_w, qh,    qw,         1};
    /* with skip and without hooks, the filter gradient in chunks of samples from x itself (the
     * same chains) */
    const int whole = skip && !j->hooks;
    if (whole && !j->filter_done) {
        const int chunk = filter_chunk(g, oc);
        for (int b = b0; b < b1; b += chunk)
            filter_sample(j->ts, g, oc, j->x + b * in_size, j->dy + b * out_size,
                          b1 - b < chunk ? b1 - b : chunk, in_size, 1, b == b0, block, 0, kkc);
    }
    const int group = j->hooks ? 1 : group_samples(g);
    for (int b = b0; b < b1; b += group) {
        const int n = b1 - b < group ? b1 - b : group;
        const float *dyb = j->dy + b * out_size;
        if (j->hooks && j->hooks->output_grad) {
            j->hooks->output_grad(j->hooks->ctx, b, dy_sample);
            dyb = dy_sample;
        }
        if (skip && !whole) {
            filter_sample(j->ts, g, oc, j->x + b * in_size, dyb, n, in_size, 1, b == b0, block, 0,
                          kkc);
        } else if (!skip) {
            for (int sm = 0; sm < n; sm++)
                pad_sample(j->x + (b + sm) * in_size, g->in_h, g->in_w, g->in_c, g->pad, g->pad,
                           pad + sm * s_pad);
            filter_sample(j->ts, g, oc, pad, dyb, n, s_pad, 0, b == b0, block, 0, kkc);
        }
        for (int sm = 0; sm < n; sm++)
            bias_rows(dyb + sm * out_size, rows, oc, b + sm == b0, db);
        if (!j->dx) continue;
        for (int sm = 0; sm < n; sm++)
            pad_sample(dyb + sm * out_size, g->out_h, g->out_w, oc, qh, qw, pad + sm * s_pad);
        p.samples = n;
        slide_image(j->ts, &p, j->dx + b * in_size);
    }
}

/* The filter gradient by rows of dwt instead of by samples: each part sums its rows over the
 * whole batch, in the chunks of samples that one range over the batch takes, so every element
 * is the same bits as on one thread, and no range keeps a filter gradient of its own. Taken
 * where the ranges' filter gradients (written, then read by sum_part) would weigh more than
 * every thread reading the whole batch's x and dy: vgg:11's 3 x 3 x 512 maps on 16 threads, whose
 * ranges of 4 samples each wrote a 9.4 MB filter gradient for 36 products an element, and whose
 * backward pass scaled 1.7 times from 1 to 16 threads (docs/PERFORMANCE.md). */
typedef struct filter_rows_job {
    const tile_set *ts;
    const conv_geom *g;
    int oc;
    const float *x, *dy;
    float *dwt;
} filter_rows_job;

static void filter_rows_part(void *ctx, size_t r0, size_t r1) {
    const filter_rows_job *j = ctx;
    const conv_geom *g = j->g;
    const size_t in_size = (size_t)g->in_h * g->in_w * g->in_c;
    const size_t out_size = (size_t)g->out_h * g->out_w * j->oc;
    const int chunk = filter_chunk(g, j->oc);
    for (int b = 0; b < g->batch; b += chunk)
        filter_sample(j->ts, g, j->oc, j->x + b * in_size, j->dy + b * out_size,
                      g->batch - b < chunk ? g->batch - b : chunk, in_size, 1, b == 0, j->dwt,
                      (int)r0, (int)r1);
}

int conv_direct_filter_by_rows(const conv_geom *g, int oc, int threads, int hooks) {
    if (centre_only(g)) { /* as conv_direct_backward computes it */
        const conv_geom c1 = centre_geom(g);
        return conv_direct_filter_by_rows(&c1, oc, threads, hooks);
    }
    const int ranges = threads < g->batch ? threads : g->batch;
    if (ranges < 2 || hooks || !conv_direct_skips_frame(g)) return 0;
    const double kkc = (double)g->kh * g->kw * g->in_c;
    const double sample = (double)g->in_h * g->in_w * g->in_c + (double)g->out_h * g->out_w * oc;
    return kkc >= 32.0 * ranges && 4.0 * kkc * oc > g->batch * sample;
}

void conv_direct_backward(const conv_geom *g, int oc, const float *x, const float *dy,
                          const float *w, float *ws, float *dw, float *db, float *dx,
                          const conv_direct_hooks *hooks, int threads) {
    const size_t kkc = (size_t)g->kh * g->kw * g->in_c, n = kkc * oc;
    if (centre_only(g)) { /* the other taps' chains have no term: +0 */
        const conv_geom c1 = centre_geom(g);
        const size_t c = (size_t)g->in_c, at = ((size_t)g->pad * g->kw + g->pad) * c;
        float *wc = centre_ws(g, &c1, oc, ws), *dwc = wc + (size_t)oc * c;
        if (dx) centre_weights(g, oc, w, wc);
        conv_direct_backward(&c1, oc, x, dy, wc, ws, dwc, db, dx, hooks, threads);
        memset(dw, 0, n * sizeof(float));
        for (int o = 0; o < oc; o++)
            memcpy(dw + o * kkc + at, dwc + o * c, c * sizeof(float));
        return;
    }
    SS_ASSERT(conv_stride(g) == 1 || !dx); /* strided: the filter and bias gradients only */
    float *w2 = ws;
    const tile_set *ts = tiles_in_use();
    if (dx) pack_rotated(ts, g, oc, w, w2, threads);
    ranges r;
    ranges_open(&r, threads, g, oc, ws);
    const int by_rows = conv_direct_filter_by_rows(g, oc, r.n, hooks != NULL);
    if (by_rows) { /* into the first range's filter gradient, which alone is summed */
        filter_rows_job fj = {ts, g, oc, x, dy, r.block[0]};
        cpu_par_for(r.n, kkc, 16, 16, filter_rows_part, &fj);
    }
    bwd_job job = {ts, g, oc, x, dy, w2, db, dx, hooks, by_rows};
    ranges_run(&r, g->batch, backward_range, &job);
    for (int t = 1; t < r.n; t++) { /* the ranges' bias sums, in range order */
        const float *db_t = block_db(g, oc, r.block[t]);
        for (int o = 0; o < oc; o++)
            db[o] += db_t[o];
    }
    ranges one = {1, {r.block[0]}};
    const ranges *sums = by_rows ? &one : &r;
    sum_job sj = {ts, sums, kkc, oc, dw};
    cpu_par_for(r.n, kkc, cpu_par_grain((size_t)oc * (size_t)sums->n), 16, sum_part, &sj);
    ranges_close(&r);
}

/* ---- the data gradient of a strided convolution (conv_direct_data_strided) ---- */

enum { STRIDED_MAX_K = 16 }; /* kernel rows and columns */

typedef struct strided_dx_job {
    const conv_geom *g;
    int oc;
    const float *dy, *wt;
    float *dx;
    const tile_set *ts;
} strided_dx_job;

/* The kernel offsets of input coordinate i along one axis (kernel size k, `out` output
 * positions) whose output position (i + pad - kk) / stride exists and lies on the stride, as a
 * bit mask */
static unsigned strided_mask(int i, int k, int pad, int stride, int out) {
    unsigned mask = 0;
    for (int t = 0; t < k; t++) {
        const int num = i + pad - t;
        if (num >= 0 && num % stride == 0 && num / stride < out) mask |= 1u << t;
    }
    return mask;
}

/* strided_mask's offsets, ascending, into kk and their output positions into pos; how many */
static int strided_taps(int i, int k, int pad, int stride, int out, int *kk, int *pos) {
    const unsigned mask = strided_mask(i, k, pad, stride, out);
    int n = 0;
    for (int t = 0; t < k; t++)
        if (mask >> t & 1u) kk[n] = t, pos[n] = (i + pad - t) / stride, n++;
    return n;
}

/* One input row of one sample: the pixels of each residue modulo the stride in runs whose
 * pixels have the same kernel columns, each run in tiles of up to ts->dx_pixels pixels and up to
 * ts->slide_nv_max channel vectors (the strided_dx tiles' widths are the slide tiles'); pixels
 * without a tap get zeros. */
static void strided_dx_row(const strided_dx_job *j, const float *dyb, int ih, float *row) {
    const conv_geom *g = j->g;
    const int s = conv_stride(g), lanes = j->ts->lanes, nv_all = g->in_c / lanes;
    int ki[STRIDED_MAX_K], oh[STRIDED_MAX_K], kj[STRIDED_MAX_K], ow[STRIDED_MAX_K];
    int ow_tile[STRIDED_MAX_K]; /* the tile's first pixel's output columns */
    const int n_rows = strided_taps(ih, g->kh, g->pad, s, g->out_h, ki, oh);
    for (int res = 0; res < s && res < g->in_w; res++)
        for (int iw = res; iw < g->in_w;) {
            const unsigned mask = strided_mask(iw, g->kw, g->pad, s, g->out_w);
            int len = 1; /* the run: pixels iw, iw + s, ... with the same columns */
            while (iw + len * s < g->in_w &&
                   strided_mask(iw + len * s, g->kw, g->pad, s, g->out_w) == mask)
                len++;
            const int n_cols = strided_taps(iw, g->kw, g->pad, s, g->out_w, kj, ow);
            if (!n_rows || !n_cols) {
                for (int p = 0; p < len; p++)
                    memset(row + (size_t)(iw + p * s) * g->in_c, 0,
                           (size_t)g->in_c * sizeof(float));
                iw += len * s;
                continue;
            }
            strided_dx_tile t = {.dy = dyb,
                                 .oc = j->oc,
                                 .in_c = g->in_c,
                                 .out_w = g->out_w,
                                 .kw = g->kw,
                                 .n_rows = n_rows,
                                 .n_cols = n_cols,
                                 .ki = ki,
                                 .oh = oh,
                                 .kj = kj,
                                 .ow = ow_tile,
                                 .ldo = (size_t)s * g->in_c};
            for (int v0 = 0; v0 < nv_all;) {
                const int nv = tile_vectors(j->ts->slide_nv_max, nv_all - v0);
                const int r_max = j->ts->dx_pixels(nv);
                t.wt = j->wt + (size_t)v0 * lanes;
                for (int p = 0; p < len;) {
                    const int r_n = len - p < r_max ? len - p : r_max;
                    for (int b = 0; b < n_cols; b++)
                        ow_tile[b] = ow[b] + p;
                    t.out = row + (size_t)(iw + p * s) * g->in_c + (size_t)v0 * lanes;
                    j->ts->strided_dx(&t, r_n, nv);
                    p += r_n;
                }
                v0 += nv;
            }
            iw += len * s;
        }
}

static void strided_dx_part(void *ctx, size_t b0, size_t b1) {
    const strided_dx_job *j = ctx;
    const conv_geom *g = j->g;
    const size_t dy_floats = (size_t)g->out_h * g->out_w * j->oc;
    const size_t dx_floats = (size_t)g->in_h * g->in_w * g->in_c;
    for (size_t b = b0; b < b1; b++)
        for (int ih = 0; ih < g->in_h; ih++)
            strided_dx_row(j, j->dy + b * dy_floats, ih,
                           j->dx + b * dx_floats + (size_t)ih * g->in_w * g->in_c);
}

void conv_direct_data_strided(const conv_geom *g, int oc, const float *dy, const float *w,
                              float *dx, int threads) {
    SS_ASSERT(conv_direct_supports_strided_dx(g, oc));
    const size_t kk = (size_t)g->kh * g->kw, kkc = kk * g->in_c;
    float *wt = ss_malloc(kk * oc * g->in_c * sizeof(float)); /* (tap, o, c) */
    for (int o = 0; o < oc; o++)
        for (size_t tap = 0; tap < kk; tap++)
            memcpy(wt + (tap * oc + o) * g->in_c, w + o * kkc + tap * g->in_c,
                   (size_t)g->in_c * sizeof(float));
    strided_dx_job j = {g, oc, dy, wt, dx, tiles_in_use()};
    const size_t per = (size_t)g->in_h * g->in_w * g->in_c * oc; /* about a sample's work */
    cpu_par_for(threads, (size_t)g->batch, cpu_par_grain(per / 4 ? per / 4 : 1), 1, strided_dx_part,
                &j);
    free(wt);
}

#else /* no x86 SIMD: conv_direct_supports() is 0, so the layers never call these */

void conv_direct_forward(const conv_geom *g, int oc, const float *x, const float *w,
                         const float *bias, int relu, float *ws, float *y,
                         const conv_direct_hooks *hooks, int threads) {
    (void)g, (void)oc, (void)x, (void)w, (void)bias, (void)relu, (void)ws, (void)y, (void)hooks;
    (void)threads;
    SS_ASSERT(0 && "direct convolution not compiled in");
}

void conv_direct_backward(const conv_geom *g, int oc, const float *x, const float *dy,
                          const float *w, float *ws, float *dw, float *db, float *dx,
                          const conv_direct_hooks *hooks, int threads) {
    (void)g, (void)oc, (void)x, (void)dy, (void)w, (void)ws, (void)dw, (void)db, (void)dx;
    (void)hooks, (void)threads;
    SS_ASSERT(0 && "direct convolution not compiled in");
}

void conv_direct_data_strided(const conv_geom *g, int oc, const float *dy, const float *w,
                              float *dx, int threads) {
    (void)g, (void)oc, (void)dy, (void)w, (void)dx, (void)threads;
    SS_ASSERT(0 && "direct convolution not compiled in");
}

#endif
