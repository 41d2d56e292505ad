/* Model profiles: per-layer parameter counts and forward FLOPs of paper-scale models, read from
 * traces/profiles/NAME.profile (format: traces/FORMAT.md "Model profiles"), and the synthesis of a
 * trace from a profile, so that replay can time models too large to emulate.
 *
 *     model_profile p; if (profile_find("resnet101", &p) != SS_OK) ... ;   // or a path
 *     double flops = p.batch_flops_per_sample * 32;                        // fwd + bwd, b = 32
 *     trace *t; profile_synthesize(&p, &pc, decisions, &t);
 */
#ifndef SS_TRACES_PROFILE_H
#define SS_TRACES_PROFILE_H

#include "traces/trace.h"

#include <stdio.h>

#define PROFILE_MAGIC "syncsim-profile"
/* 4: measured seconds per layer (a profile imported from a profiler trace); 3: layer kinds and
 * matrix shapes; 2: per-layer bytes and kernels; 1, 2 and 3 are still read */
#define PROFILE_VERSION    4
#define PROFILE_MAX_LAYERS 100000

typedef struct model_profile {
    char name[64];
    char description[160];
    char input[64];                   /* one sample's shape ("3x224x224", "35 tokens"; "": none) */
    int layers;                       /* layer lines read */
    double params;                    /* P: sum of the layers' parameters */
    double forward_flops_per_sample;  /* sum of the layers' forward FLOPs */
    double backward_flops_per_sample; /* explicit per layer, else backward_factor x forward */
    double backward_factor;           /* default 2 */
    double sample_bytes;              /* one training sample on the wire (0: not given) */
    double published_params;          /* the count the profile is checked against (0: none) */
    int batch;                        /* the batch the paper used (0: not given) */
    int version;                      /* format version of the file */
    /* version 2 and 3: per layer and per sample (param_bytes per step), forward order; NULL for a
     * version 1 profile, which has no per-layer data. Freed by profile_free. */
    sim_layer_cost *layer_costs;
    char (*layer_names)[64]; /* the same layers' names (versions 2 and 3; NULL for version 1) */
    /* version 4, imported from a profiler trace (traces/profile_import.h): the layers' measured
     * seconds (layer_costs[i].fwd_s, bwd_s, per step of measured_batch samples) and the host's
     * gap, the step's time not covered by layers; measured is 0 for a profile without them */
    int measured;
    int measured_batch;       /* the batch the times were measured at */
    int measured_steps;       /* steps averaged */
    double measured_step_s;   /* mean step: the layers' seconds + measured_gap_s */
    double measured_gap_s;    /* mean host time a step not covered by the layers */
    char measured_device[16]; /* cpu | cuda */
} model_profile;

void profile_free(model_profile *p);
/* The layers of one step of `batch` samples into out (p->layers entries); SS_EUSAGE when the
 * profile has no per-layer data (version 1). */
int profile_step_layers(const model_profile *p, int batch, sim_layer_cost *out);

/* Reads a profile file; SS_EINPUT "PATH:LINE: problem" on bad input, with a hint for a version
 * mismatch. */
int profile_load(const char *path, model_profile *out);
int profile_read(FILE *fp, const char *name, model_profile *out);
/* A NAME (looked up as DIR/NAME.profile, DIR = $SYNCSIM_PROFILE_DIR or the source tree's
 * traces/profiles) or a path (anything with a '/' or ending in .profile). */
int profile_find(const char *name_or_path, model_profile *out);
/* The directory searched by profile_find. */
const char *profile_dir(void);
/* The profiles of profile_dir(), sorted by name: one line each, "INDENT NAME  INPUT, batch B:
 * DESCRIPTION" (what --help lists, read from the files themselves so that it cannot drift from
 * them); a line saying so when the directory holds none or cannot be read. Returns how many. */
int profile_print_list(FILE *out, const char *indent);
/* The names of profile_dir()'s profiles, ", "-separated and sorted, into buf (for messages). */
const char *profile_names(char *buf, size_t n);

/* FLOPs of one worker step of `batch` samples: batch x (forward + backward). */
double profile_step_flops(const model_profile *p, int batch);

/* Writes p as a version-4 profile (the format profile_read reads back); `comments` (may be NULL)
 * are written as '#' lines first, one per line of the text. */
void profile_write(FILE *fp, const model_profile *p, const char *comments);

/* A trace of pc->steps steps from a profile: one recorded worker whose every step costs
 * profile_step_flops(p, pc->batch) (replay gives it to all pc->workers workers) and the step's
 * layers (profile_step_layers), exchanges of 4 P bytes, and per step the global decision
 * decisions[s] (NULL: every step synchronizes). The trace's compute mode is pc->compute when that
 * is model (replay times the layers with the per-layer GPU model at its precision; SS_EUSAGE for
 * a profile without per-layer data), measured for a profile with measured times (every step
 * costs its measured seconds x pc->compute.scale x pc->batch / measured_batch, replayed as
 * recorded seconds; its layers carry their measured seconds, after a first layer "host_gap" of
 * the gap; SS_EUSAGE for a profile without them), else flops (FLOPs at the host's speed). */
int profile_synthesize(const model_profile *p, const policy_config *pc, const int8_t *decisions,
                       trace **out);

#endif
