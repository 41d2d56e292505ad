/* Internal: the layer clock of model_set_layer_clock (model.h), shared by the layer graph
 * (model.c) and the gpt passes (gpt_pass.c). A pass laps the clock after each layer; the seconds
 * since the previous lap go to that layer's slot of the pass's sums. On a device with marks (a
 * GPU) a lap records a mark in the device's queue and the pass's marks are resolved once at its
 * end (no synchronization between layers); otherwise a lap synchronizes the device and reads the
 * wall clock. */
#ifndef SS_KERNELS_LAYER_CLOCK_H
#define SS_KERNELS_LAYER_CLOCK_H

#include "kernels/device_impl.h"

typedef struct layer_clock {
    device *dev;
    double *fwd, *bwd; /* the sums (fwd[i], bwd[i] for slot i), or NULL: stopped */
    int cap;           /* marks allocated (a forward and a backward pass's laps) */
    void **marks;
    double **mark_sums; /* the sums each mark closes a lap of */
    int *mark_slot;     /* its slot, -1 for a pass's start */
    int n_marks;
    double t; /* the wall clock's previous lap */
} layer_clock;

/* Starts (fwd and bwd not NULL) or stops the clock of a model of `slots` slots. */
void layer_clock_set(layer_clock *c, device *dev, int slots, double *fwd, double *bwd);

/* A lap closing `slot` of sums (slot -1: a pass's start, whose time counts nowhere). Nothing when
 * sums is NULL. */
void layer_clock_lap(layer_clock *c, double *sums, int slot);

/* The pass's marks added to their slots (waiting for the last one); nothing without marks. */
void layer_clock_resolve(layer_clock *c);

void layer_clock_free(layer_clock *c);

#endif
