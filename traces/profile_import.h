/* A model profile imported from a torch.profiler Chrome trace (prof.export_chrome_trace), as
 * bench/record_profile.py records one: the measured forward and backward time of every layer,
 * the host's gap (the step's time not covered by layers) and each layer's parameters, written as
 * a version-4 profile (traces/FORMAT.md "Imported profiles") that replay times with its measured
 * seconds.
 *
 *     profile_import_opts o = {.trace_path = "t.json", .params_path = "t.params.json"};
 *     model_profile p; char notes[512];
 *     if (profile_import(&o, &p, notes, sizeof notes) != SS_OK) ... ss_error_message() ...;
 *     profile_import_write(&p, notes, "mine.profile"); profile_free(&p);
 *
 * The trace: "ProfilerStep#N" ranges (one per recorded step), a "syncsim.layer:NAME" range
 * around every module's forward (record_function), the operators (cpu_op) with their
 * "Sequence number", autograd's "autograd::engine::evaluate_function: ..." events for the
 * backward, and on a GPU trace the kernels with their "External id". A layer's forward time is
 * that of the top-level operators whose innermost layer range is its own (CPU trace) or of the
 * kernels they launch (GPU trace); its backward time that of the backward functions whose
 * sequence number is one of its forward operators', with the gradient accumulation of its
 * parameters that follows them.
 */
#ifndef SS_TRACES_PROFILE_IMPORT_H
#define SS_TRACES_PROFILE_IMPORT_H

#include "traces/profile.h"

#include <stddef.h>

/* a trace file is at most this large */
#define PROFILE_IMPORT_MAX_BYTES ((long long)1 << 30)

typedef struct profile_import_opts {
    const char *trace_path;  /* the Chrome-trace JSON */
    const char *params_path; /* the companion params file (NULL: from the operators' shapes) */
    const char *name;        /* the profile's name (NULL: the params file's model, or "imported") */
    int batch;               /* samples a step (0: the params file's batch) */
    int steps;               /* a Chakra trace: the training steps it holds (0: 1) */
} profile_import_opts;

/* Reads the trace (and params file) into *out, a measured version-4 profile, and a few lines of
 * provenance into notes (the comments of the written file). The file's content decides what it
 * is: a Chrome trace (gzip-compressed or not), or a Chakra execution trace, binary or JSON,
 * which chakra_import.h maps (its own rules: --batch needed, no params file, --steps). SS_EINPUT
 * naming the file, and the event or line where there is one, on bad input; SS_EUSAGE for a missing
 * batch. */
int profile_import(const profile_import_opts *o, model_profile *out, char *notes, size_t n);

/* Writes the profile to `path` through a temporary file renamed into place (nothing is left
 * on failure); SS_EIO naming the file. */
int profile_import_write(const model_profile *p, const char *notes, const char *path);

#endif
