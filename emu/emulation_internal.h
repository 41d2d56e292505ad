/* Internal to the emulation step source (emu/emulation.c, and its evaluations in
 * emu/emulation_eval.c): the emulation's state. */
#ifndef SS_EMU_EMULATION_INTERNAL_H
#define SS_EMU_EMULATION_INTERNAL_H

#include "emu/emulation.h"
#include "analysis/gradient_dump.h"
#include "emu/augment.h"
#include "emu/emulation_jobs.h"

/* A cached aggregation result: the mean of one group for one aggregation sequence number. */
typedef struct agg_slot {
    long seq;        /* -1: free */
    int key;         /* first member of the group (-1: all workers) */
    int pending;     /* callers that have not taken it yet */
    float *mean;     /* (P) device buffer */
    float *buf_mean; /* (S) the members' mean running statistics (bn_average) */
    int copies;      /* deferred copies of the mean not yet made: the slot is not reused */
} agg_slot;

/* Work on a worker's own replica deferred to its next job (emulation_jobs.h), in order: the
 * copy of an average into its parameters or gradients, and its optimizer step. Each is the same
 * arithmetic on the same values as when it was asked for: nothing else touches the replica in
 * between without running it first. */
typedef enum em_op_kind { EM_OP_COPY, EM_OP_STEP } em_op_kind;
typedef struct em_op {
    em_op_kind kind;
    aggregate_what what;   /* COPY: into the parameters or the gradients */
    const float *mean;     /* COPY: the slot's mean (P) */
    const float *buf_mean; /* COPY: its statistics (S; NULL: none) */
    int slot;              /* COPY: index into slots, released once the copy is made */
    float lr;              /* STEP */
} em_op;
#define EM_MAX_OPS 4 /* a worker's deferred ops before they run at once */

struct emulation {
    emulation_config cfg;
    gradient_dump *dump; /* --dump-gradients (NULL: none) */
    step_source src;
    size_t params;                  /* P */
    size_t buffers;                 /* S: batch-norm running statistics (0: none) */
    augment aug;                    /* cfg.augment */
    double flops_per_sample;        /* forward + backward */
    int n_layers;                   /* layers of the compute model (the model's, plus the loss) */
    model_layer_cost *layer_sample; /* (n_layers) per-sample costs */
    sim_layer_cost *layer_step;     /* (N, n_layers) each worker's last step, whole batch */
    model **replicas;               /* (N) */
    sgd_state **opts;               /* (N) */
    partition *part;
    batch_iter **iters; /* (N) */

    em_jobs *jobs; /* the steps' computations in flight, and their mini-batch staging */
    /* data injection: a worker's batch is drawn early when it shares part of it */
    size_t **next_batch;  /* (N, max_batch) indices of the worker's next own batch */
    int *next_batch_size; /* (N) 0: not drawn yet */
    size_t **injected;    /* (N, max_batch) indices received for the next compute */
    int *injected_count;  /* (N) */

    agg_slot *slots;
    int n_slots;
    em_op (*ops)[EM_MAX_OPS]; /* (N) each worker's deferred work */
    int *n_ops;               /* (N) */
    /* (N) measure_time: seconds of the optimizer steps each worker ran since its last measured
     * step, which its next one is charged (a step's update runs after its aggregation) */
    double *opt_s;
    int defer;            /* 0 in real mode: the work runs when asked for */
    const float **gather; /* (N) pointers for device_mean */

    /* parameter server */
    float *ps_params;    /* (P) */
    float **ps_pushed;   /* (N) bn_average: each worker's statistics at its last push (S) */
    sgd_state **ps_opts; /* (K) one per shard */
    long *last_step;     /* (N) latest step each worker computed (for the server's lr) */

    /* evaluation */
    model *eval_model; /* holds the consensus parameters */
    long *done_step;   /* (N) latest step each worker finished */
    long next_eval;    /* next step to evaluate */
    double loss_sum;   /* training loss since the last evaluation */
    long loss_count;
    double samples;     /* samples computed so far */
    double eval_wall_s; /* wall seconds of the evaluations of the consensus model so far */
    emulation_eval last;
    int eval_pending;            /* an evaluation begun, its chunks on the engine */
    emulation_eval pending_eval; /* its row but the test loss and accuracy */
    /* an evaluation due, waiting for the jobs in flight when it came due (em_jobs_mark): its
     * step, time and counters then, and the statistics (S) of the workers with no job in flight
     * then, which their next job may change first */
    int eval_marked;
    long mark_step;
    double mark_now_s;
    step_counters mark_counters;
    int mark_counted;
    float *stage;    /* (N, S) device memory, allocated at the first mark */
    uint8_t *staged; /* (N) */
    int *mark_group; /* (N) scratch: those workers */
    /* real mode: the snapshots kept at evaluation steps */
    emulation_snapshot *snaps;
    float *snap_params; /* (n_snaps, P) host */
    size_t n_snaps, cap_snaps;
    int diverged;
    long diverged_step;
};

/* The step source's step_done (emulation_eval.c): the evaluations (or, in real mode, the
 * snapshots) that every worker's having finished `step` makes due. The last one is left begun,
 * its test-set chunks on the engine beside the jobs submitted next (or, with jobs in flight,
 * marked: begun once they are settled, beside the step submitted next), and its row written at
 * the next step_done (or evaluation, or the run's end). */
void em_step_done(void *self, int w, long step, double now_s);

#endif
