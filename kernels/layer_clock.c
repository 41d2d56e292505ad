/* The layer clock (layer_clock.h). */
#include "kernels/layer_clock.h"

#include "common/status.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

void layer_clock_set(layer_clock *c, device *dev, int slots, double *fwd, double *bwd) {
    c->dev = dev;
    c->fwd = fwd;
    c->bwd = bwd;
    c->n_marks = 0;
    if (!fwd || c->marks || !dev->ops->mark_create) return;
    /* a start and a mark a slot for each pass, a slot more beside them */
    c->cap = 2 * (slots + 2);
    c->marks = ss_calloc((size_t)c->cap, sizeof *c->marks);
    c->mark_sums = ss_calloc((size_t)c->cap, sizeof *c->mark_sums);
    c->mark_slot = ss_calloc((size_t)c->cap, sizeof *c->mark_slot);
    for (int i = 0; i < c->cap; i++)
        c->marks[i] = dev->ops->mark_create(dev);
}

void layer_clock_lap(layer_clock *c, double *sums, int slot) {
    if (!sums) return;
    if (c->marks) {
        SS_ASSERT(c->n_marks < c->cap);
        c->dev->ops->mark_record(c->dev, c->marks[c->n_marks]);
        c->mark_sums[c->n_marks] = sums;
        c->mark_slot[c->n_marks++] = slot;
        return;
    }
    device_sync(c->dev);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const double now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    if (slot >= 0) sums[slot] += now - c->t;
    c->t = now;
}

void layer_clock_resolve(layer_clock *c) {
    if (!c->marks) return;
    for (int k = 1; k < c->n_marks; k++)
        if (c->mark_slot[k] >= 0)
            c->mark_sums[k][c->mark_slot[k]] +=
                c->dev->ops->mark_seconds(c->dev, c->marks[k - 1], c->marks[k]);
    c->n_marks = 0;
}

void layer_clock_free(layer_clock *c) {
    for (int i = 0; c->marks && i < c->cap; i++)
        c->dev->ops->mark_destroy(c->dev, c->marks[i]);
    free(c->marks);
    free(c->mark_sums);
    free(c->mark_slot);
    memset(c, 0, sizeof *c);
}
