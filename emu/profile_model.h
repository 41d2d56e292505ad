/* A model profile (traces/profile.h) of an emulated model: its layers as the compute model sees
 * them when `syncsim train` runs that model (kernels/model.h's model_cost_layer_at, the layers
 * emulation.c hands the compute model each step), written as a version-4 profile without
 * measured times, so that `syncsim replay --profile FILE --compute model` times the same steps
 * at any scale; or, measured (o->measure), with each layer's seconds on this machine's CPU or
 * GPU, which `replay --profile FILE` then replays as measured.
 *
 *     profile_model_opts o = {.model = "resnet:20", .dataset = "cifar10", .batch = 128};
 *     model_profile p; char notes[512];
 *     if (profile_model_make(&o, &p, notes, sizeof notes) != SS_OK) ... ss_error_message() ...;
 *     profile_import_write(&p, notes, "resnet20.profile"); profile_free(&p);
 *
 * Per sample and per layer (forward order, the loss last): the forward and backward FLOPs, the
 * activation bytes (4 an element), the parameters, the kernel launches per pass, the kind (conv,
 * linear, norm; the others take the plain rates) and a product's N and K, every number as the
 * emulator computes it, written at 17 digits so that it reads back bit for bit.
 */
#ifndef SS_EMU_PROFILE_MODEL_H
#define SS_EMU_PROFILE_MODEL_H

#include "kernels/model.h"
#include "traces/profile.h"

#include <stddef.h>

typedef struct profile_model_opts {
    const char *model;    /* a --model text: "mlp", "resnet:20", "gpt:wlm", ... */
    const char *dataset;  /* NULL or "": fashion-mnist for image models, web-bible for gpt */
    const char *data_dir; /* the data set's directory (--data-dir; NULL: its default) */
    int batch;            /* samples a step, 1 to 1000000: the profile's batch */
    const char *name;     /* the profile's name (NULL: the model text) */
    /* measuring (NULL: none): a device request ("cpu", "cuda", "auto") on which each layer's
     * forward and backward seconds are measured (kernels/bench.h's bench_measure_layers), on the
     * data set's first `batch` training samples (data_dir for its directory; random data of its
     * shape, said on stderr and in the notes, where it cannot be read), and written as the
     * profile's measured times, so that `replay --profile FILE` replays them (--compute
     * measured, its default for such a profile) */
    const char *measure;
    int measure_steps;   /* timed steps after 2 warm-up ones (0: 10) */
    int measure_threads; /* on the CPU, OpenBLAS's threads while measuring (0: 1, as each
                          * emulated worker computes) */
} profile_model_opts;

/* The input shape and classes of a data set: the image sets by name (fashion-mnist, mnist,
 * synthetic: 1x28x28, 10 classes; cifar10: 3x32x32, 10; cifar100: 3x32x32, 100), without reading
 * them; a text set (web-bible, wikitext-2, wikitext-103, ptb, or a directory of one) is read for
 * its vocabulary (the classes), as train reads it; another directory is read as train reads it.
 * *text is 1 for a text set. SS_EUSAGE for an unknown name, SS_EINPUT for unreadable data. */
int profile_model_dataset_shape(const char *set, const char *data_dir, int *c, int *h, int *w,
                                int *classes, int *text);

/* The profile of a model spec at `batch` samples a step: name and description are left for the
 * caller (out->name is the arch's name). The layers come from the spec's graph
 * (model_spec_cost_layers: no model is created, nothing allocated for its tensors), per sample.
 * SS_EUSAGE for a spec the emulator cannot build. */
int profile_model_from_spec(const model_spec *spec, int batch, model_profile *out);

/* Parses o->model against o->dataset's shape and makes its profile, with a few lines saying
 * where it comes from in notes (the comments of the written file). SS_EUSAGE naming the option
 * for an unknown model or data set, an image model with a text set or the reverse, a batch
 * outside 1..1000000 or a name that is not one word of at most 63 characters. With o->measure,
 * a device that cannot be opened gives its error. */
int profile_model_make(const profile_model_opts *o, model_profile *out, char *notes, size_t n);

#endif
