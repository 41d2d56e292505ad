/* The emulation step source: N workers with real model replicas (flat parameters, gradients,
 * SGD state), each reading its own partition, driven by the policy actors of sim/policy/policy.h.
 * Aggregation really averages the replicas, a parameter server really holds and updates its
 * parameters, and the consensus model (the mean of the replicas, or the server's parameters for
 * SSP/ASP) is evaluated on the test set when every worker has reached an evaluation step. The
 * evaluation takes no simulated time. The consensus model's batch-norm running statistics are the
 * mean of the replicas' (SSP/ASP with bn_average: the server's, the mean of the last pushed).
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
#include "sim/policy/step_source.h"

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
    double partition_param; /* noniid's k, dirichlet's alpha */
    lr_schedule schedule;   /* learning rate per step */
    double momentum;
    double weight_decay;
    int nesterov;     /* Nesterov momentum */
    double clip_norm; /* > 0: each gradient applied is clipped to this L2 norm */
    int augment;      /* 1: random crop (padding 4) and flip of every image batch */
    /* 1 (--bn-stats average): every aggregation also averages the members' batch-norm running
     * statistics among the same workers (GA or PA alike), and a parameter server hands out the
     * mean of the statistics each worker last pushed; their bytes travel with each exchange
     * (step_source.state_bytes). 0 (local): each replica keeps its own. */
    int bn_average;
    long eval_every;    /* evaluate at multiples of this step ... */
    long last_step;     /* ... and at this one */
    int measure_time;   /* 1: time each step's real computation (--compute measured) */
    int threads;        /* the compute engine's threads (common/engine.h; 0 or 1: none) */
    int trace;          /* keep the engine's timeline (emulation_trace_write) */
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
    /* Real mode (syncsim real): this process runs one rank of the run, and the exchange moves
     * the data. Aggregations find the SUM over the members in the worker's own vector (an
     * all-reduce's result, or a broadcast of one) and divide it; at each evaluation step the
     * worker's parameters are kept (a snapshot) instead of evaluated, and rank 0 evaluates the
     * snapshots of every rank at the end (emulation_evaluate_given); with data injection, every
     * worker's batch stream is drawn in step on every rank, so that a receiver takes the same
     * samples from its own copy of the data set as the sender computes. A diverged loss does
     * not stop a real run early (the ranks could not agree on when). */
    int real;
    /* --dump-gradients: steps whose gradient samples go to out_dir/gradients/ ("" or NULL: none) */
    const char *dump_gradients;
    const char *out_dir;
} emulation_config;

typedef struct emulation emulation;

int emulation_create(const emulation_config *cfg, emulation **out);
void emulation_destroy(emulation *e);
step_source *emulation_source(emulation *e);
/* The layers of one step of `samples` samples, as compute() gives them (malloc'ed, *n of them;
 * the caller frees it). */
sim_layer_cost *emulation_step_layers(const emulation *e, int samples, int *n);
/* The compute model's kind of an emulated model's layer (conv, dense, norm, max pooling, other). */
sim_layer_kind emulation_layer_kind(const model_layer_cost *l);

/* Finishes the evaluation that the last step_done began and left running beside the steps (its
 * row written): where the training loop ends, so that the loop's wall time includes it. */
void emulation_finish_evaluation(emulation *e);
/* 1 while an evaluation is begun (or marked, to begin once the jobs in flight settle) and not
 * finished: a training loop that stops its clock then has left that evaluation out of it. Reading
 * it finishes nothing. */
int emulation_evaluation_open(const emulation *e);
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
const emulation_eval *emulation_last_eval(emulation *e);
/* The replica of worker w (for tests: compare parameters across policies). */
model *emulation_replica(emulation *e, int w);
/* The compute engine's threads (emulation_config.threads, or 1 where the device runs one
 * replica at a time). */
int emulation_threads(const emulation *e);
/* Samples computed by all workers so far. */
double emulation_samples(const emulation *e);
/* Wall seconds of the work the compute engine runs or splits over its threads (the replicas'
 * steps with their optimizer steps and copies of averages, the split averages and evaluations),
 * summed over its threads. On one thread, the rest of the run's time stays serial whatever
 * --threads is. */
double emulation_work_seconds(const emulation *e);
/* Wall seconds of the evaluations of the consensus model (its averaging and its pass over the
 * test set, split over the engine's threads) so far; the steps they waited for excluded. */
double emulation_eval_seconds(emulation *e);
/* The compute engine's timeline (emulation_config.trace) as a Chrome trace at path
 * (emulation_jobs.h); SS_EIO naming the file when it cannot be written. */
int emulation_trace_write(const emulation *e, const char *path);

/* Real mode: what one worker's rank kept at an evaluation step. */
typedef struct emulation_snapshot {
    long step;
    double now_s;      /* the exchange's clock when the worker finished the step */
    long sync_steps;   /* the rank's policy counters then */
    double bytes_sent; /* the rank's bytes so far */
    double loss_sum;   /* its training losses since its previous snapshot */
    double loss_count;
    double samples; /* samples it computed so far */
} emulation_snapshot;

/* Real mode: the snapshots this rank kept, in step order; *params: P floats per snapshot. */
/* Real mode, after a run stopped early at `step` by an interruption: worker w's snapshot of
 * that step with the counters c, unless its last snapshot is of it already. */
void emulation_snapshot_stop(emulation *e, int w, long step, double now_s, const step_counters *c);
size_t emulation_snapshots(const emulation *e, const emulation_snapshot **snaps,
                           const float **params);
/* Real mode, rank 0: evaluates, as the evaluation of `step` at clock now_s, the consensus of
 * the replicas whose parameters are given (params[w]: P floats of worker w, host memory; they
 * become the replicas here), or the parameter server's parameters `ps` (P floats) when not NULL;
 * with the run's counters and training loss then, and the samples computed so far. */
void emulation_evaluate_given(emulation *e, const float *const *params, const float *ps, long step,
                              double now_s, const step_counters *counters, double train_loss,
                              double samples);
/* The parameter server's parameters into host memory (P floats); 0 when the run has none. */
int emulation_ps_download(emulation *e, float *host);

#endif
