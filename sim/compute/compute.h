/* Compute time of a worker's step: plain arithmetic over the step's cost and the host it runs
 * on. Charging the time to a simulated actor is the SimGrid side's (sim/net/compute_charge.h).
 *
 *     sim_compute_cfg cc;  sim_compute_parse("--compute", "flops", &cc);   // the default
 *     sim_step_cost cost = {.flops = step_flops};          // counted by the kernels (fwd + bwd)
 *     sim_compute_host h = {.speed_flops = 15.7e12};       // the worker's host
 *     double flops, s; sim_compute_charge(&cc, &cost, &h, &flops, &s);
 *
 * Modes:
 * - flops (default, deterministic): the step's FLOPs executed on the worker's host, whose speed
 *   is the effective FLOP/s of its GPU class in the platform; concurrent executions on one host
 *   share its speed;
 * - measured[:SCALE]: the real elapsed seconds of the step on this machine times SCALE
 *   (default 1), as a sleep: independent of the host's speed;
 * - trace: the seconds recorded in a trace (replay), as a sleep;
 * - model: the per-layer GPU model, as a sleep, with the framework's host time where
 *   cfg.framework says (framework.h: eager PyTorch issues every operation from the host; the
 *   step is the later of the two timelines). Each layer's device time (forward and backward) is
 *   max(FLOPs / achieved FLOP/s, bytes / achieved memory bandwidth) + launch overhead x kernels
 *   (a convolution or dense layer at the share of the FLOP/s its shape reaches, a normalization
 *   at the class's normalization bandwidth), on the GPU class of the host (its "gpu" property in
 *   the platform; a host without one takes the class whose FP32 peak is nearest its speed) at the
 *   configured precision, plus the optimizer step (sim/compute/gpu_table.h gives the rates and
 *   their sources); mixed precision adds autocast's weight casts and the scaler's unscale, a
 *   first-layer convolution runs at fp32 under tf32, and eager adds its per-parameter kernels
 *   (compute.c, [PARAMS], [INPUT]). It needs the step's layers (sim_layer_cost); a step
 *   source without them cannot use it.
 * A step's `slowdown` (stragglers, jitter) multiplies the time in every mode.
 */
#ifndef SS_SIM_COMPUTE_H
#define SS_SIM_COMPUTE_H

#include "sim/compute/framework.h"
#include "sim/compute/gpu_table.h"

typedef enum sim_compute_mode {
    SIM_COMPUTE_FLOPS = 0,
    SIM_COMPUTE_MEASURED = 1,
    SIM_COMPUTE_TRACE = 2,
    SIM_COMPUTE_MODEL = 3
} sim_compute_mode;

typedef struct sim_compute_cfg {
    sim_compute_mode mode;
    double scale; /* measured mode: simulated seconds per measured second (> 0);
                     model mode: a factor on the modelled times (1, or validate
                     scaling's calibration to a published single-GPU throughput) */
    sim_precision
        precision; /* model mode: fp32 (0) | tf32 | fp16 | bf16 | pytorch (the CLI default) */
    const gpu_class *gpu; /* model mode: NULL = the class of the worker's host */
    /* model mode: the framework's host timeline beside the device's (framework.h); ideal (0):
     * the device's time alone. host_sync: the policy reads a value back every step */
    sim_framework framework;
    int host_sync;
} sim_compute_cfg;

/* The host a worker computes on, as the model needs it. */
typedef struct sim_compute_host {
    double speed_flops;   /* the host's speed (flops mode; the class's fallback below) */
    const gpu_class *gpu; /* its GPU class (NULL: the class whose FP32 peak is nearest speed) */
} sim_compute_host;

/* One layer of a step, as the step source knows it (forward and backward of the whole batch).
 * Activation bytes are counted at 4 bytes an element; the model scales them to the precision's
 * element size (2 at fp16/bf16). */
/* What the compute model needs to know of a layer's kind (zero: other). */
typedef enum sim_layer_kind {
    SIM_LAYER_OTHER = 0,   /* element-wise, average pooling, loss, attention, embedding */
    SIM_LAYER_MATMUL = 1,  /* dense layer (or a product of unknown origin): gemm_n x gemm_k */
    SIM_LAYER_NORM = 2,    /* batch or layer normalization (reductions over the activations) */
    SIM_LAYER_CONV = 3,    /* convolution: a matrix product too, run by cuDNN */
    SIM_LAYER_MAXPOOL = 4, /* max pooling (gpu_class_maxpool_bw_Bps) */
    SIM_LAYER_KIND_COUNT
} sim_layer_kind;

/* A convolution or a dense layer: a matrix product whose shape sets its share of the rate. */
static inline int sim_layer_is_product(sim_layer_kind k) {
    return k == SIM_LAYER_MATMUL || k == SIM_LAYER_CONV;
}

typedef struct sim_layer_cost {
    double fwd_flops, bwd_flops; /* FLOPs of the layer's forward / backward pass, whole batch */
    double fwd_bytes, bwd_bytes; /* bytes moved through GPU memory (activations, weights, grads) */
    double param_bytes;          /* bytes of the layer's gradient (4 x parameters at fp32) */
    int kernels;                 /* kernel launches per pass */
    sim_layer_kind kind;
    /* MATMUL, CONV: the product's output columns N (output channels or features) and reduction
     * length K (input channels x kernel height x width, or input features); 0: unknown */
    double gemm_n, gemm_k;
    /* measured seconds of the layer's forward / backward pass, whole batch (a profile imported
     * from a profiler trace); 0 and 0: not measured */
    double fwd_s, bwd_s;
} sim_layer_cost;

/* "flops", "measured", "measured:SCALE" (SCALE > 0), "trace", "model"; SS_EUSAGE naming `option`
 * and the valid forms otherwise. The precision and GPU are set apart (precision fp32, gpu NULL). */
int sim_compute_parse(const char *option, const char *text, sim_compute_cfg *out);
/* Writes the canonical text of a configuration ("measured:2.5") into buf. */
void sim_compute_format(const sim_compute_cfg *cfg, char *buf, unsigned long buf_bytes);

/* The cost of one step, as the step source knows it. Only the field of the mode is read. */
typedef struct sim_step_cost {
    double flops;                 /* forward + backward FLOPs of the step (flops mode) */
    double measured_s;            /* real elapsed seconds on this machine (measured mode) */
    double trace_s;               /* seconds from a trace record (trace mode) */
    double slowdown;              /* multiplies the time (straggler); 0 or 1 = none */
    const sim_layer_cost *layers; /* model mode: the step's layers (forward order) */
    int n_layers;
} sim_step_cost;

/* The precision class g runs a layer of kind k at under p (pytorch: tf32 for a convolution where
 * g has it, else fp32). */
sim_precision sim_compute_layer_precision(const gpu_class *g, sim_precision p, sim_layer_kind k);

/* Per-layer times of one step on GPU class g at precision p, in simulated seconds: fwd_s[i],
 * bwd_s[i] for i in 0..n-1 (may be NULL), and *optimizer_s (may be NULL: the SGD-with-momentum
 * update of every parameter, memory bound). Returns the total. Deterministic. */
double sim_compute_layers_on(const gpu_class *g, sim_precision p, const sim_layer_cost *layers,
                             int n, double *fwd_s, double *bwd_s, double *optimizer_s);
/* The same on cfg's GPU (cfg->gpu, else the host's class) in model mode, each part as its share
 * of the step on the framework's two timelines (sim_framework_step); in the other modes each
 * layer's FLOPs on the host's speed, as flops mode times a whole step, or, where any layer has
 * measured seconds (fwd_s, bwd_s), every layer's measured seconds, and no optimizer time (the
 * bucketed overlap splits a step this way). SS_EUSAGE for n < 1 or a negative or
 * non-finite count. */
int sim_compute_layers(const sim_compute_cfg *cfg, const sim_compute_host *host,
                       const sim_layer_cost *layers, int n, double *fwd_s, double *bwd_s,
                       double *optimizer_s);
/* The whole step as sim_compute_layers times it (the parts' sum) into *step_s. */
int sim_compute_step_s(const sim_compute_cfg *cfg, const sim_compute_host *host,
                       const sim_layer_cost *layers, int n, double *step_s);
/* The GPU class of a host: its own, or the one whose FP32 peak is nearest its speed. */
const gpu_class *sim_compute_host_class(const sim_compute_host *host);

/* Simulated seconds the step takes on `host` (its speed counts in flops mode only). */
double sim_compute_duration_s(const sim_compute_cfg *cfg, const sim_step_cost *cost,
                              const sim_compute_host *host);
/* What the step costs its host: *flops of work to execute there (flops mode: the slowdown
 * stretches the work, so a straggler also shares its host longer) and *seconds to wait (the
 * other modes); the other one is 0. SS_EUSAGE for a negative or non-finite cost, or model mode
 * without the step's layers. */
int sim_compute_charge(const sim_compute_cfg *cfg, const sim_step_cost *cost,
                       const sim_compute_host *host, double *flops, double *seconds);

#endif
