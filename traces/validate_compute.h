/* `syncsim validate compute`: predicts published single-GPU training throughputs with the
 * per-layer compute model (sim/compute/compute.h) from the model profiles, and compares; or, layer
 * by layer, measured per-layer times (bench/torch_layers.py).
 *
 *     validate_compute_result r;
 *     int rc = validate_compute("traces/reference/compute/throughputs.csv", 0.15, stdout, &r);
 *     // rc SS_OK; r.median_rel_error; r.within_bound
 */
#ifndef SS_TRACES_VALIDATE_COMPUTE_H
#define SS_TRACES_VALIDATE_COMPUTE_H

#include <stdio.h>

#define VALIDATE_COMPUTE_BOUND 0.15 /* documented target: median relative error <= 15 % */

typedef struct validate_compute_result {
    int rows;
    double median_rel_error; /* |predicted - published| / published */
    int within_bound;        /* median <= bound */
} validate_compute_result;

/* The reference CSV (columns id,model,gpu,precision,batch,images_per_s; '#' lines are comments)
 * where a NULL path is traces/reference/compute/throughputs.csv of the source tree. Each row is
 * predicted on the framework's two timelines (sim/compute/framework.h) as the row's training loop
 * ran: optional columns framework (eager, graphs, ideal; eager where absent or empty, as
 * --framework) and host_sync (1: the loop read a value back to the host every step, as PyTorch's
 * GradScaler does; 0 where absent). Prints a table to out, with each row's error of the GPU's
 * time alone beside it. SS_EINPUT "FILE:LINE: ..." for a bad row (unknown GPU class, precision,
 * profile without per-layer data, framework or host_sync).
 * A file with a profile_layer column is a per-layer measurement (bench/torch_layers.py's layers
 * table: model, gpu, precision, batch, profile_layer, fwd_us, bwd_us; consecutive rows of one
 * model, GPU, precision and batch form a group): each group's measured times are summed per
 * profile layer and set against the model's, per layer kind; the error of a group is that of
 * the sums over the layers measured, and res gives their median over the groups. */
int validate_compute(const char *csv_path, double bound, FILE *out, validate_compute_result *res);

#endif
