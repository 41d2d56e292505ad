/* The emulation step source: N workers with real model replicas (flat parameters, gradients,
 * SGD state), each reading its own partition, driven by the policy actors of sim/policy.h.
 * Aggregation really averages the replicas, a parameter server really holds and updates its
 * parameters, and the consensus model (the mean of the replicas, or the server's parameters for
 * SSP/ASP) is evaluated on the test set when every worker has reached an evaluation step. The
 * evaluation takes no simulated time.
 *
 *     emulation *e; emulation_create(&ec, &e);
 *     step_source *src = emulation_source(e);
 *     policy_run(&pc, cluster, src, ...);        // evaluations arrive through ec.on_eval
 *     emulation_destroy(e);
 */
#ifndef SS_EMU_EMULATION_H
#define SS_EMU_EMULATION_H

#include "emu/dataset.h"
#include "emu/partition.h"
#include "kernels/device.h"
#include "kernels/model.h"
#include "kernels/optim.h"
#include "sim/step_source.h"

/* One evaluation of the consensus model. */
typedef struct emulation_eval {
    long step;         /* global step every worker has reached */
    double epoch;      /* samples processed / |D| */
    double sim_time_s; /* simulated clock when the last worker reached the step */
    double train_loss; /* mean mini-batch loss of all worker steps since the last evaluation */
    double test_loss;  /* mean test loss of the consensus model */
    double test_accuracy;
    long sync_steps;   /* global steps that synchronized so far */
    double bytes_sent; /* all messages so far */
} emulation_eval;

typedef struct emulation_config {
    device *dev;
    const dataset *train;
    const dataset *test;
    const model_spec *spec;
    uint64_t seed; /* replicas all start from the same initialization (seed) */
    int workers;   /* N */
    int batch;     /* a worker's own samples per step (b, or b' under data injection) */
    int max_batch; /* largest batch a worker computes (own + injected samples) */
    partition_kind partition;
    int labels_per_worker; /* non-IID k */
    lr_schedule schedule;  /* learning rate per step */
    double momentum;
    double weight_decay;
    long eval_every;    /* evaluate at multiples of this step ... */
    long last_step;     /* ... and at this one */
    int measure_time;   /* 1: time each step's real computation (--compute measured) */
    int layer_norms;    /* 1: compute the sum of per-layer gradient norms each step */
    int use_ps;         /* 1: keep parameter-server parameters (SSP/ASP) */
    int ps_servers;     /* shards of the server's parameters */
    double ps_lr_scale; /* the server applies each pushed gradient with lr x this (SSP: 1/N, so
                          that N pushes move the model as far as one BSP step) */
    int evaluate_ps;    /* 1: evaluate the server's parameters instead of the replicas' mean */
    /* Called at each evaluation. */
    void (*on_eval)(void *ctx, const emulation_eval *ev);
    void *eval_ctx;
    /* Polled before each step's computation (may be NULL): nonzero ends the run (interruption). */
    int (*interrupted)(void);
    /* --dump-gradients: steps whose gradient samples go to out_dir/gradients/ ("" or NULL: none) */
    const char *dump_gradients;
    const char *out_dir;
} emulation_config;

typedef struct emulation emulation;

int emulation_create(const emulation_config *cfg, emulation **out);
void emulation_destroy(emulation *e);
step_source *emulation_source(emulation *e);

/* Evaluates the consensus now, unless the latest evaluation is already at the last step that
 * every worker finished (for runs that end early: diverged, interrupted). */
void emulation_evaluate_final(emulation *e, double now_s, const step_counters *final);
/* The mean over workers of each replica's own test accuracy (what a worker would deploy), as
 * opposed to the consensus model's: under gradient aggregation or local steps the replicas drift
 * apart and their mean is not a model any worker holds. Evaluates N models: call it once, at
 * the end. */
double emulation_worker_accuracy_mean(emulation *e);
/* 1 once some step produced a NaN or Inf loss (the run diverged); the step is in *step. */
int emulation_diverged(const emulation *e, long *step);
/* The latest evaluation (test_accuracy < 0 before the first). */
const emulation_eval *emulation_last_eval(const emulation *e);
/* The replica of worker w (for tests: compare parameters across policies). */
model *emulation_replica(emulation *e, int w);
/* Samples computed by all workers so far. */
double emulation_samples(const emulation *e);

#endif
