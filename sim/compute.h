/* Compute time of a worker's step, charged to the calling actor in simulated time.
 *
 *     sim_compute_cfg cc;  sim_compute_parse("--compute", "flops", &cc);   // the default
 *     sim_step_cost cost = {.flops = step_flops};          // counted by the kernels (fwd + bwd)
 *     double dt_s; sim_compute_step(&cc, &cost, &dt_s);     // inside the worker actor
 *
 * Modes:
 * - flops (default, deterministic): the step's FLOPs executed on the actor's host
 *   (sg_actor_execute), whose speed is the effective FLOP/s of its GPU class in the platform;
 *   concurrent executions on one host share its speed;
 * - measured[:SCALE]: the real elapsed seconds of the step on this machine times SCALE
 *   (default 1), as a sleep: independent of the host's speed;
 * - trace: the seconds recorded in a trace (replay), as a sleep.
 * A step's `slowdown` (stragglers) multiplies the time in every mode.
 */
#ifndef SS_SIM_COMPUTE_H
#define SS_SIM_COMPUTE_H

typedef enum sim_compute_mode {
    SIM_COMPUTE_FLOPS = 0,
    SIM_COMPUTE_MEASURED = 1,
    SIM_COMPUTE_TRACE = 2
} sim_compute_mode;

typedef struct sim_compute_cfg {
    sim_compute_mode mode;
    double scale; /* measured mode: simulated seconds per measured second (> 0) */
} sim_compute_cfg;

/* "flops", "measured", "measured:SCALE" (SCALE > 0), "trace"; SS_EUSAGE naming `option` and the
 * valid forms otherwise. */
int sim_compute_parse(const char *option, const char *text, sim_compute_cfg *out);
/* Writes the canonical text of a configuration ("measured:2.5") into buf. */
void sim_compute_format(const sim_compute_cfg *cfg, char *buf, unsigned long buf_bytes);

/* The cost of one step, as the step source knows it. Only the field of the mode is read. */
typedef struct sim_step_cost {
    double flops;      /* forward + backward FLOPs of the step (flops mode) */
    double measured_s; /* real elapsed seconds on this machine (measured mode) */
    double trace_s;    /* seconds from a trace record (trace mode) */
    double slowdown;   /* multiplies the time (straggler); 0 or 1 = none */
} sim_step_cost;

/* Simulated seconds the step takes on `host` speed_flops (flops mode; other modes ignore it). */
double sim_compute_duration_s(const sim_compute_cfg *cfg, const sim_step_cost *cost,
                              double host_speed_flops);
/* Charges the step to the calling actor (blocks it for the simulated duration); *elapsed_s (may
 * be NULL) = simulated time it took. SS_EUSAGE for a negative or non-finite cost. */
int sim_compute_step(const sim_compute_cfg *cfg, const sim_step_cost *cost, double *elapsed_s);

/* One layer of a step, as the step source knows it (forward and backward of `batch` samples). */
typedef struct sim_layer_cost {
    double fwd_flops, bwd_flops; /* FLOPs of the layer's forward / backward pass, whole batch */
    double fwd_bytes, bwd_bytes; /* bytes moved through GPU memory (activations, weights, grads) */
    double param_bytes;          /* bytes of the layer's gradient (4 x parameters at fp32) */
    int kernels;                 /* kernel launches per pass */
} sim_layer_cost;

/* Per-layer times of one step under cfg on a GPU class (the host's), in simulated seconds:
 * fwd_s[i], bwd_s[i] for i in 0..n-1 (layer order, forward direction), plus the optimizer
 * step. Deterministic; jitter is applied by the caller per step, not here. Call it inside a
 * worker actor (the host is the actor's). */
int sim_compute_layers(const sim_compute_cfg *cfg, const sim_layer_cost *layers, int n,
                       double *fwd_s, double *bwd_s, double *optimizer_s);

#endif
