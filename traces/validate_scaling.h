/* `syncsim validate scaling`: predicts published multi-GPU data-parallel scaling efficiencies by
 * replaying model profiles (BSP, the all-reduce the reference's software ran, overlap with fused
 * buckets, the per-layer compute model scaled to a published single-GPU throughput where the row
 * gives one) at 1 GPU and at N GPUs on a node platform per reference, and compares.
 *
 *     validate_scaling_result r;
 *     int rc = validate_scaling(NULL, VALIDATE_SCALING_BOUND, stdout, &r);   // the shipped CSV
 *     // rc SS_OK; r.median_rel_error; r.within_bound; r.shape_ok
 *
 * Each replay runs in its own process (common/isolate.h). Efficiency = throughput(N) / (N x
 * throughput(1)) = time(1 GPU) / time(N GPUs) for the same steps of the same per-GPU batch.
 */
#ifndef SS_TRACES_VALIDATE_SCALING_H
#define SS_TRACES_VALIDATE_SCALING_H

#include <stdio.h>

#define VALIDATE_SCALING_BOUND 0.15 /* documented target: median relative error <= 15 % */
#define VALIDATE_SCALING_STEPS 3    /* replayed steps per point: every step is alike */
#define VALIDATE_SCALING_FUSION_MB                                                                 \
    64.0 /* Horovod's default fusion buffer (docs/tensor-fusion.rst: "Default fusion buffer size   \
            is 64 MB"), the bucket of the overlap */

typedef struct validate_scaling_result {
    int rows;                /* rows predicted */
    int skipped;             /* rows without a profile ("-"): printed, not predicted */
    double median_rel_error; /* |predicted - published| / published */
    int shape_ok;            /* every model's efficiency falls (or stays) with N as published */
    int within_bound;        /* median <= bound (the shape is reported apart) */
} validate_scaling_result;

/* The reference CSV (columns id,model,profile,batch_per_gpu,gpu,precision,gpus,gpus_per_node,
 * intra,fabric,bandwidth,collective,protocol,single_gpu_images_per_s,
 * published_scaling_efficiency,source; '#' lines are comments), where a NULL path is
 * traces/reference/scaling/scaling.csv of the source tree. Prints a table to out. SS_EINPUT
 * "FILE:LINE: ..." for a bad row (unknown GPU class, profile, fabric, collective, a protocol
 * that does not apply to it, a throughput that is not positive). */
int validate_scaling(const char *csv_path, double bound, FILE *out, validate_scaling_result *res);

#endif
