/* Internal to the emulation (emu/emulation.c): the workers' step computations in flight on the
 * compute engine (common/engine.h). A worker's job gathers its mini-batch, runs the forward and
 * backward passes on its own replica and takes the gradient's norms; it touches nothing else, so
 * the results are the same bits for any thread count.
 *
 * Jobs are accounted in the order they began (a FIFO): the source's bookkeeping of a job (the
 * training loss sum, samples, divergence, gradient dumps) happens when it is settled, in that
 * order, so that it sums exactly as when every computation finished the moment it began. Anyone
 * who reads a replica, or the bookkeeping, settles the jobs it depends on first.
 *
 * A worker's work on its own replica between two steps (its optimizer step, its copy of an
 * average) is deferred: its next job runs it first, or whoever owns the replica before runs it
 * (em_jobs_own, em_jobs_own_group, em_jobs_settle_all). Element-wise work over one vector (an
 * average, a parameter server's update) runs in ranges that the caller shares with the threads
 * that are free (em_jobs_ranges). Both compute the same bits on any thread. */
#ifndef SS_EMU_EMULATION_JOBS_H
#define SS_EMU_EMULATION_JOBS_H

#include "emu/dataset.h"
#include "kernels/model.h"

#include "emu/augment.h"

#include <stddef.h>

/* What one worker's step computed. */
typedef struct em_job_out {
    long step;
    int samples;
    double loss, grad_norm, layer_norm_sum;
    double measured_s; /* the forward and backward passes' wall time (measure only) */
} em_job_out;

typedef struct em_jobs em_jobs;

/* Called once per job as it is settled, in the order the jobs began. */
typedef void (*em_job_settled_fn)(void *ctx, int worker, const em_job_out *out);

typedef struct em_jobs_config {
    int threads; /* of the engine (1: every job runs in the worker's call) */
    int workers;
    int max_batch;
    const dataset *train;
    device *dev;
    const model_spec *spec; /* the replicas': the evaluations' models on the engine's threads */
    uint64_t seed;
    int measure_time;   /* time the passes */
    int layer_norms;    /* sum of the per-layer gradient norms as well */
    const augment *aug; /* random crops and flips of each batch (NULL: none) */
    em_job_settled_fn settled;
    /* A worker's deferred work on its own replica (its optimizer step, its copy of an average),
     * marked by em_jobs_defer: run at the start of the worker's next job, on the job's thread, or
     * when something owns the replica first (any thread: it touches only that replica and what
     * the source keeps for it). deferred_done follows on the caller's thread, once it has run. */
    void (*deferred)(void *ctx, int worker);
    void (*deferred_done)(void *ctx, int worker);
    void *ctx;
    int trace; /* keep the engine's timeline (em_jobs_trace_write) */
} em_jobs_config;

int em_jobs_create(const em_jobs_config *cfg, em_jobs **out);
/* The engine's timeline (cfg.trace) as a Chrome trace at path (common/engine.h): each thread's
 * tasks (a worker's step, with its deferred optimizer step and copy inside; the averages, the
 * deferred work and other element-wise work split in ranges; the evaluations' chunks) and the
 * simulation thread's waits; its gaps on that row are the simulation's own time. */
int em_jobs_trace_write(const em_jobs *j, const char *path);
void em_jobs_destroy(em_jobs *j); /* settles every job first */
int em_jobs_threads(const em_jobs *j);
/* Worker w's indices of its next batch (max_batch of them), written before em_jobs_submit. */
size_t *em_jobs_indices(em_jobs *j, int w);
/* A mini-batch staging area the caller may use while no job is in flight (a warm-up pass). */
void em_jobs_staging(em_jobs *j, float **x, uint8_t **y);
/* Worker w's step `step` on replica m over the first `samples` of its indices. With grad_ready
 * (the overlap of real mode, which starts collectives from it) the job runs now in the caller,
 * after every job in flight. */
void em_jobs_submit(em_jobs *j, int w, model *m, long step, int samples,
                    void (*grad_ready)(void *ctx, int layer), void *hook_ctx);
/* Waits for worker w's job and settles it (and every job begun before it); its result. */
const em_job_out *em_jobs_take(em_jobs *j, int w);
/* Settles worker w's job if one is in flight, and runs its deferred work (before anything
 * reads or writes its replica). */
void em_jobs_own(em_jobs *j, int w);
/* em_jobs_own for the n workers of `group` (NULL: 0 .. n - 1), their deferred work across the
 * engine. */
void em_jobs_own_group(em_jobs *j, const int *group, int n);
/* Settles worker w's job if one is in flight, leaving any deferred work deferred. */
void em_jobs_settle_worker(em_jobs *j, int w);
/* Worker w has (more) deferred work: the source queued it. Its next job runs it first, unless
 * its replica is owned before (em_jobs_own, em_jobs_own_group, em_jobs_settle_all). */
void em_jobs_defer(em_jobs *j, int w);
/* Settles every job begun for a step before `step` (and those begun before them). */
void em_jobs_settle_before(em_jobs *j, long step);
/* Settles every job, and runs every worker's deferred work (across the engine). */
void em_jobs_settle_all(em_jobs *j);
/* 1 while worker w's job is in flight (submitted, not yet settled). */
int em_jobs_in_flight(const em_jobs *j, int w);
/* fn(ctx) once the jobs in flight now are settled, and before anything else is: the jobs in
 * flight now all settle together (in order) at the first call that settles a job, owns,
 * defers, settles all or submits a second job, and fn runs right after them (at once when no job
 * is in flight). One submit is let through first, so that the worker whose step made an
 * evaluation due starts its next step beside those jobs rather than after them; fn sees the
 * replicas of the jobs settled as they would be at this call, after them. One mark at a time. */
void em_jobs_mark(em_jobs *j, void (*fn)(void *ctx), void *ctx);
/* A mark set: its jobs settled and its fn run now (nothing without one). */
void em_jobs_resolve(em_jobs *j);
/* Wall seconds of the work the engine runs or splits over its threads: the jobs (deferred work
 * included), the deferred work run on its own, the split means and evaluations; summed over the
 * threads. With one thread, the rest of a run's time is what stays serial on any thread count. */
double em_jobs_work_seconds(const em_jobs *j);

/* fn(ctx, lo, count) over ranges covering [0, total): element-wise work (the same bits however
 * it is split), which the caller runs with the engine's threads that are free joining in; it
 * waits for no job in flight. Ranges touch only what the caller owns. Returns once all ran. */
void em_jobs_ranges(em_jobs *j, size_t total, void (*fn)(void *ctx, size_t lo, size_t count),
                    void *ctx);
/* out = the mean of the k vectors xs[j] of n floats (device_mean), in ranges (em_jobs_ranges):
 * per element the same sum in the same order, so the same bits. */
void em_jobs_mean(em_jobs *j, size_t n, int k, const float *const *xs, float *out);

/* Evaluations on the engine (after settling every job), the test set's chunks of max_batch
 * samples on its threads and their losses summed in order: the same bits as model_evaluate. */
/* Model `from` on `test`, in two halves: start settles every job and queues the chunks (a
 * language model, or one thread: evaluated at once), and returns; the jobs submitted meanwhile
 * run beside the chunks, which read `from` and the slots' evaluation models only, so `from` must
 * not change until finish, which waits for them and returns the sum of the losses, and *correct.
 * One evaluation at a time. */
void em_jobs_evaluate_start(em_jobs *j, model *from, const dataset *test);
double em_jobs_evaluate_finish(em_jobs *j, size_t *correct);
/* The mean over the n replicas of each one's test accuracy; `holder` (a model of the same spec)
 * takes each replica in turn where the engine has one thread. */
double em_jobs_accuracy_mean(em_jobs *j, model *const *replicas, int n, model *holder,
                             const dataset *test);

#endif
