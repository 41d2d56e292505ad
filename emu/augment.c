/* Random crop with padding and horizontal flip of image batches (see augment.h). */
#include "emu/augment.h"

#include "common/rng.h"
#include "common/status.h"

#include <stdlib.h>
#include <string.h>

/* The stream of worker w's step s: apart from the streams of common/rng.h (all below 2^62). */
static uint64_t stream_of(int worker, long step) {
    return (1ULL << 62) | ((uint64_t)(uint32_t)worker << 32) | (uint64_t)(uint32_t)step;
}

int augment_init(augment *a, const dataset *train, int pad, uint64_t seed) {
    memset(a, 0, sizeof *a);
    if (train->c < 1 || train->c > AUGMENT_MAX_CHANNELS || train->h < 2 || train->w < 2)
        return ss_error_set(SS_EUSAGE,
                            "--augment yes: data set %s is not an image set (%d x %d x %d); "
                            "crops and flips need images of 1 to %d channels (use --augment no)",
                            train->name, train->c, train->h, train->w, AUGMENT_MAX_CHANNELS);
    a->c = train->c;
    a->h = train->h;
    a->w = train->w;
    a->pad = pad;
    a->seed = seed;
    const size_t plane = (size_t)a->h * (size_t)a->w;
    for (int ch = 0; ch < a->c; ch++) {
        float m = train->n ? train->x[(size_t)ch * plane] : 0.0f;
        for (size_t i = 0; i < train->n; i++) {
            const float *p = train->x + (i * (size_t)a->c + (size_t)ch) * plane;
            for (size_t k = 0; k < plane; k++)
                if (p[k] < m) m = p[k];
        }
        a->fill[ch] = m;
    }
    a->scratch = ss_malloc(sizeof(float) * (size_t)a->c * plane);
    return SS_OK;
}

void augment_free(augment *a) {
    free(a->scratch);
    a->scratch = NULL;
}

augment_draw augment_draw_of(const augment *a, int worker, long step, int i) {
    rng r;
    rng_seed(&r, a->seed, stream_of(worker, step));
    augment_draw d = {0, 0, 0};
    const uint64_t span = 2 * (uint64_t)a->pad + 1;
    for (int k = 0; k <= i; k++) { /* sample i's draws follow those of samples 0..i-1 */
        d.dy = (int)rng_below(&r, span);
        d.dx = (int)rng_below(&r, span);
        d.flip = (int)rng_below(&r, 2);
    }
    return d;
}

void augment_sample(const augment *a, const float *in, float *out, augment_draw d) {
    const int h = a->h, w = a->w;
    for (int ch = 0; ch < a->c; ch++) {
        const float *src = in + (size_t)ch * h * w;
        float *dst = out + (size_t)ch * h * w;
        for (int y = 0; y < h; y++) {
            const int sy = y + d.dy - a->pad;
            for (int x = 0; x < w; x++) {
                const int sx = (d.flip ? w - 1 - x : x) + d.dx - a->pad;
                dst[(size_t)y * w + x] =
                    sy >= 0 && sy < h && sx >= 0 && sx < w ? src[(size_t)sy * w + sx] : a->fill[ch];
            }
        }
    }
}

void augment_batch(augment *a, float *x, int n, int worker, long step) {
    rng r;
    rng_seed(&r, a->seed, stream_of(worker, step));
    const uint64_t span = 2 * (uint64_t)a->pad + 1;
    const size_t d = (size_t)a->c * a->h * a->w;
    for (int i = 0; i < n; i++) {
        augment_draw dr;
        dr.dy = (int)rng_below(&r, span);
        dr.dx = (int)rng_below(&r, span);
        dr.flip = (int)rng_below(&r, 2);
        float *s = x + (size_t)i * d;
        augment_sample(a, s, a->scratch, dr);
        memcpy(s, a->scratch, sizeof(float) * d);
    }
}
