/* `syncsim validate network`: the all-reduce times syncsim predicts against real nccl-tests
 * measurements (traces/reference/nccl/README.md).
 *
 *     validate_opts o = {.root = "traces/reference/nccl", .max_large = 0.10, .max_small = 0.30};
 *     int st = validate_network(&o, stdout);   // SS_EINPUT when a median exceeds its bound
 *
 * Each subdirectory of root (in name order) is one reference: reference.csv (key,value rows:
 * ranks, collective, network_model, platform), measured.csv (size_bytes,time_us: nccl-tests'
 * out-of-place time) and the platform file. Every size is simulated (one all-reduce of `ranks`
 * workers, bench_network_allreduce) and compared: relative error = (predicted - measured) /
 * measured. The median of |error| over the sizes >= 1 MiB and over those < 1 MiB is checked
 * against max_large and max_small; a group without sizes is not checked.
 */
#ifndef SS_SIM_VALIDATE_NETWORK_H
#define SS_SIM_VALIDATE_NETWORK_H

#include <stdio.h>

#define VALIDATE_LARGE_BYTES 1048576.0 /* sizes >= 1 MiB are "large" */

typedef struct validate_opts {
    const char *root; /* directory of references */
    double max_large; /* bound on the median |relative error| of sizes >= 1 MiB */
    double max_small; /* bound on the median |relative error| of sizes < 1 MiB */
} validate_opts;

/* Median of |x[i]| (n > 0); x is reordered. */
double validate_median_abs(double *x, int n);
/* Runs every reference, prints the tables and a summary to out. SS_EINPUT naming the file for a
 * malformed reference, or naming the reference when a median exceeds its bound. */
int validate_network(const validate_opts *o, FILE *out);

#endif
