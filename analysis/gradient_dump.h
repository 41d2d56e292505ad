/* Samples of gradient values written at chosen steps, for the report's kernel density plots.
 * A sample is at most GRADIENT_DUMP_MAX_VALUES entries taken at an even stride over the flat
 * gradient (all layers), written as text to DIR/gradients/step-S-worker-W.txt:
 *
 *     # syncsim gradient sample, format 1
 *     # step 120 worker 3 params 7850 stride 2
 *     -0.00123
 *     ...
 *
 * The emulator calls it from its compute step (see emu/emulation.c):
 *
 *     gradient_dump *gd; gradient_dump_create("100,500", out_dir, &gd);   // --dump-gradients
 *     if (gradient_dump_wants(gd, step)) gradient_dump_device(gd, dev, model_grads(m), P, step, w);
 *     gradient_dump_destroy(gd);
 */
#ifndef SS_ANALYSIS_GRADIENT_DUMP_H
#define SS_ANALYSIS_GRADIENT_DUMP_H

#include "kernels/device.h"

#include <stddef.h>

#define GRADIENT_DUMP_MAX_VALUES 4096 /* values per sample */
#define GRADIENT_DUMP_MAX_STEPS  64   /* steps in one --dump-gradients list */

typedef struct gradient_dump gradient_dump;

/* Parses the comma-separated step list (positive integers); "" gives *out = NULL (nothing to
 * dump). SS_EUSAGE naming --dump-gradients on a bad list. */
int gradient_dump_create(const char *steps, const char *out_dir, gradient_dump **out);
void gradient_dump_destroy(gradient_dump *gd);
/* The largest step of the list (0 for NULL). */
long gradient_dump_last_step(const gradient_dump *gd);
/* 1 if `step` is in the list (gd may be NULL: 0). */
int gradient_dump_wants(const gradient_dump *gd, long step);
/* Downloads the (n) device gradient and writes its sample; errors are reported on stderr once,
 * since a missing sample must not stop a training run. */
void gradient_dump_device(gradient_dump *gd, device *dev, const float *dev_grads, size_t n,
                          long step, int worker);

/* Writes the sample of a host gradient (n values) to DIR/gradients/step-S-worker-W.txt. */
int analysis_dump_gradients(const float *host_grads, size_t n, long step, int worker,
                            const char *dir);

#endif
