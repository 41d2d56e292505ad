/* Data augmentation of image mini-batches, as the CIFAR training recipes use it (He et al. 2016,
 * section 4.2): a random crop of the image padded by `pad` pixels on each side (torchvision's
 * RandomCrop(size, padding=4)), then a random horizontal flip with probability 1/2. Padding takes
 * the value of a black pixel (raw 0), as torchvision pads before normalizing: per channel, the
 * smallest value of the training set. The draws of sample i of worker w's step s come from a
 * stream of their own per (seed, w, s), so that a run is the same whatever else runs.
 *
 *     augment a; augment_init(&a, &train, 4, seed);
 *     augment_batch(&a, x, n, worker, step);   // x: (n, c, h, w) host floats, in place
 *     augment_free(&a);
 */
#ifndef SS_EMU_AUGMENT_H
#define SS_EMU_AUGMENT_H

#include "emu/dataset.h"

#include <stdint.h>

#define AUGMENT_MAX_CHANNELS 4

typedef struct augment {
    int c, h, w;
    int pad;                          /* pixels of padding on each side (crop offsets 0..2 pad) */
    float fill[AUGMENT_MAX_CHANNELS]; /* per channel: the value of a black pixel */
    uint64_t seed;
    float *scratch; /* (c, h, w): one sample */
} augment;

/* The draws of one sample: the crop's offset into the padded image (0..2 pad; pad, pad is the
 * image itself) and whether it is mirrored. */
typedef struct augment_draw {
    int dy, dx;
    int flip;
} augment_draw;

/* SS_EUSAGE for a data set that is not an image set of at most 4 channels. */
int augment_init(augment *a, const dataset *train, int pad, uint64_t seed);
void augment_free(augment *a);
/* The draw of sample i of worker w's step `step`. */
augment_draw augment_draw_of(const augment *a, int worker, long step, int i);
/* One sample: out[ch][y][x] = in[ch][y + dy - pad][x' + dx - pad] with x' = flip ? w-1-x : x,
 * the channel's fill where that falls outside the image. in and out must not overlap. */
void augment_sample(const augment *a, const float *in, float *out, augment_draw d);
/* Every sample of a batch of worker w's step, in place. */
void augment_batch(augment *a, float *x, int n, int worker, long step);

#endif
